//! `fsmatrix plan`: load, validate, plan, print.  Contacts no host.
use super::{CliError, CmdResult, Exit, PlanArgs};
use crate::plan::{plan as make_plan, render};
use crate::run::dry;

pub fn plan(args: &PlanArgs) -> CmdResult {
    let given = crate::config::GivenPaths {
        ssh_config: args.ssh_config.clone(),
        recorded: None,
    };
    let (inv, m) = crate::config::load_given(&args.inventory, &args.matrix, &given)?;
    eprint!("{}", crate::config::ssh_config::report(&inv));
    let p = make_plan(&inv, &m);
    if args.commands {
        let hosts = super::runtime()?.block_on(dry::commands(&inv, &p));
        println!("{}", dry::LIVE_VALUES);
        if let (true, Some(seed)) = (p.seed_drawn, p.seed) {
            println!(
                "# order = \"random\" without a seed: these commands use seed {seed}, drawn now; \
                 a run draws its own and records it in its bundle (set seed = {seed} in the \
                 matrix to run this very order)"
            );
        }
        for (host, text) in hosts {
            print!("## {host}\n{text}");
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
        let mut v = serde_json::to_value(&p)
            .map_err(|e| CliError::nothing_ran(format!("failed to serialize the plan: {e}")))?;
        if let (Some(learned), Some(o)) = (&learned, v.as_object_mut()) {
            // Beside the plan (plan.json in a bundle stays the defaults').
            let by_host: serde_json::Map<String, serde_json::Value> = learned
                .iter()
                .map(|(h, e)| (h.clone(), serde_json::json!(e)))
                .collect();
            o.insert("history_eta".into(), by_host.into());
        }
        let s = serde_json::to_string_pretty(&v)
            .map_err(|e| CliError::nothing_ran(format!("failed to serialize the plan: {e}")))?;
        println!("{s}");
    } else {
        print!("{}", render(&p));
        if let Some(learned) = &learned {
            print!("{}", crate::eta::render_planned(&p, learned));
        }
    }
    Ok(Exit::Success)
}
