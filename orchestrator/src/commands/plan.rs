//! `fsmatrix plan`: load, validate, plan, print.  Contacts no host.
use super::{CliError, CmdResult, Exit, PlanArgs};
use crate::plan::{plan as make_plan, render};
use crate::run::dry;

pub fn plan(args: &PlanArgs) -> CmdResult {
    let (inv, m) = crate::config::load(&args.inventory, &args.matrix)?;
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
    } else if args.json {
        let s = serde_json::to_string_pretty(&p)
            .map_err(|e| CliError::nothing_ran(format!("failed to serialize the plan: {e}")))?;
        println!("{s}");
    } else {
        print!("{}", render(&p));
    }
    Ok(Exit::Success)
}
