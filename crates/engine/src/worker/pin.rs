//! Pinning a load thread to the CPUs it was given.

use std::io;

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
