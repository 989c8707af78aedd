//! Placing a load thread where the run asked: the caller's hook (into a
//! control group, say), then the CPUs it was given. Every kind of load
//! thread starts here, so none runs where the run says it did not.

use std::io;

use super::ThreadPlan;

/// Places the calling load thread as `plan` asks; the error voids the run.
pub(crate) fn place(plan: &ThreadPlan) -> Result<(), String> {
    if let Some(hook) = &plan.thread_start {
        (hook.0)().map_err(|e| format!("cannot place a load thread: {e}"))?;
    }
    if let Some(cpus) = &plan.cpus {
        current_thread(cpus)
            .map_err(|e| format!("cannot pin a load thread to CPUs {cpus:?}: {e}"))?;
    }
    Ok(())
}

pub(super) fn current_thread(cpus: &[usize]) -> io::Result<()> {
    if let Some(&bad) = cpus.iter().find(|&&c| c >= libc::CPU_SETSIZE as usize) {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            format!("CPU {bad} is beyond what this system can address"),
        ));
    }
    // SAFETY: cpu_set_t is plain data; CPU_SET bounds are checked above.
    let rc = unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        for &cpu in cpus {
            libc::CPU_SET(cpu, &mut set);
        }
        libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set)
    };
    if rc == 0 {
        Ok(())
    } else {
        Err(io::Error::last_os_error())
    }
}
