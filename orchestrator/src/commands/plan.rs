//! `fsmatrix plan`: load, validate, plan, print.  Contacts no host.
use super::{CliError, CmdResult, Exit, PlanArgs};
use crate::plan::{plan as make_plan, render};
use crate::run::dry;

pub fn plan(args: &PlanArgs) -> CmdResult {
    let given = crate::config::GivenPaths {
        ssh_config: args.ssh_config.clone(),
        recorded: None,
    };
    let (inv, m) = crate::config::load_given(
        &args.inventory,
        &args.matrix,
        &given,
        crate::generator::script_uses,
    )?;
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
