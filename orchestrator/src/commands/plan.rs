//! `fsmatrix plan`: load, validate, plan, print.  Contacts no host.
use super::{CliError, CmdResult, Exit, PlanArgs};
use crate::plan::{plan as make_plan, render};
use crate::run::dry;

pub fn plan(args: &PlanArgs) -> CmdResult {
    args.recorded.only_with_from(&args.from)?;
    let (inv, m) = match (&args.from, &args.inventory, &args.matrix) {
        (Some(bundle), _, _) => {
            let given = args.recorded.given(&args.ssh_config);
            let (inv, m, _) =
                crate::run::snapshot::read(bundle, &given).map_err(CliError::failed_to)?;
            crate::stdio::err!("{}", uses_of_the_bundle(&inv));
            (inv, m)
        }
        (None, Some(i), Some(mx)) => {
            let given = crate::config::GivenPaths {
                ssh_config: args.ssh_config.clone(),
                recorded: None,
            };
            crate::config::load_given(i, mx, &given, crate::generator::script_uses)?
        }
        _ => {
            return Err(CliError::nothing_ran(
                "give --inventory and --matrix, or --from BUNDLE",
            ))
        }
    };
    crate::stdio::err!("{}", crate::config::ssh_config::report(&inv));
    let p = make_plan(&inv, &m);
    if args.commands {
        let hosts = super::runtime()?.block_on(dry::commands(&inv, &p));
        crate::stdio::outln!("{}", dry::LIVE_VALUES);
        if let (true, Some(seed)) = (p.seed_drawn, p.seed) {
            crate::stdio::outln!(
                "# order = \"random\" without a seed: these commands use seed {seed}, drawn now; \
                 a run draws its own and records it in its bundle (set seed = {seed} in the \
                 matrix to run this very order)"
            );
        }
        for (host, text) in hosts {
            crate::stdio::out!("## {host}\n{text}");
        }
        return Ok(Exit::Success);
    }
    let learned = match &args.history {
        Some(dir) => {
            let names = p
                .hosts
                .iter()
                .map(|h| h.host.as_str().to_string())
                .collect();
            let h = super::history(Some(dir), Some(&names))?;
            Some(crate::eta::planned(&p, &|host| h.of(host).to_vec()))
        }
        None => None,
    };
    if args.json {
        // Written straight to stdout, never through a `serde_json::Value`:
        // a plan of `max_cells` cells as a Value tree took ~7.6 KiB a cell
        // (900 000 cells: 6.9 GB, 205 s); streamed, the plan itself is the
        // memory (~0.4 KiB a cell).
        #[derive(serde::Serialize)]
        struct WithHistory<'a> {
            #[serde(flatten)]
            plan: &'a crate::plan::Plan,
            /// Beside the plan (plan.json in a bundle stays the defaults').
            #[serde(skip_serializing_if = "Option::is_none")]
            history_eta: Option<serde_json::Map<String, serde_json::Value>>,
        }
        let history_eta = learned.as_ref().map(|l| {
            l.iter()
                .map(|(h, e)| (h.clone(), serde_json::json!(e)))
                .collect()
        });
        let out = WithHistory {
            plan: &p,
            history_eta,
        };
        let mut w = std::io::BufWriter::new(crate::stdio::Stdout);
        serde_json::to_writer_pretty(&mut w, &out)
            .map_err(|e| CliError::nothing_ran(format!("failed to write the plan: {e}")))?;
        use std::io::Write as _;
        writeln!(w)
            .and_then(|()| w.flush())
            .map_err(|e| CliError::nothing_ran(format!("failed to write the plan: {e}")))?;
    } else {
        crate::stdio::out!("{}", render(&p));
        if let Some(learned) = &learned {
            crate::stdio::out!("{}", crate::eta::render_planned(&p, learned));
        }
    }
    Ok(Exit::Success)
}

/// What a re-run of a bundle would use of what it records (each one named
/// on the command line, or the read would have refused): per host, the
/// devices it may destroy and the consents that hold.
fn uses_of_the_bundle(inv: &crate::config::Inventory) -> String {
    use crate::text::terminal_safe;
    let mut out = String::from("from the bundle, as you named them:\n");
    for h in &inv.hosts {
        let mut what: Vec<String> = vec![format!(
            "devices {}",
            h.devices
                .iter()
                .map(|d| terminal_safe(d.as_str()).into_owned())
                .collect::<Vec<_>>()
                .join(" ")
        )];
        if h.allow_script_commands {
            what.push("allow_script_commands".into());
        }
        if !h.consent_foreign.is_empty() {
            what.push(format!(
                "consent_foreign {}",
                h.consent_foreign
                    .iter()
                    .map(|d| terminal_safe(d.as_str()).into_owned())
                    .collect::<Vec<_>>()
                    .join(" ")
            ));
        }
        if !h.allow_postgres_settings.is_empty() {
            what.push(format!(
                "allow_postgres_settings {}",
                h.allow_postgres_settings
                    .iter()
                    .map(|s| terminal_safe(s.as_str()).into_owned())
                    .collect::<Vec<_>>()
                    .join(" ")
            ));
        }
        out.push_str(&format!(
            "  {}: {}\n",
            terminal_safe(h.name.as_str()),
            what.join("; ")
        ));
    }
    out
}
