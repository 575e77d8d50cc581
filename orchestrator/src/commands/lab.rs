//! `fsmatrix lab up | down | status`.
use super::{CliError, CmdResult, Exit, LabCommand};
use crate::lab::{self, LabAction, LabError};

pub fn lab(cmd: LabCommand) -> CmdResult {
    let action = match cmd {
        LabCommand::Up(a) => LabAction::Up {
            dir: a.dir.dir,
            hosts: a.hosts,
            disk_size: a.disk_size,
            install: a.install,
            oses: a.os,
            bastion: a.bastion,
            guests: a.guests,
        },
        LabCommand::Down(d) => LabAction::Down { dir: d.dir },
        LabCommand::Status(d) => LabAction::Status { dir: d.dir },
    };
    match lab::run(&action) {
        // The script printed its own errors.
        Ok(0) => Ok(Exit::Success),
        Ok(1) => Ok(Exit::Problems),
        Ok(_) => Ok(Exit::NothingRan),
        Err(e @ (LabError::Script(_) | LabError::Bash(_))) => Err(CliError::failed_to(e)),
        Err(e) => Err(CliError::nothing_ran(e.to_string())),
    }
}
