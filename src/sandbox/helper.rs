//! The helper side of the sandbox: `qa-loop __sandbox-exec`, started by qa-loop (directly, or
//! through sudo) with a [`Spec`] on its standard input. It runs before any thread or runtime
//! exists, so plain `fork` is sound here.
//!
//! 1. `unshare` a PID and a mount namespace (and a user namespace, and a network namespace
//!    when the network is cut);
//! 2. fork: the child is PID 1 of the new PID namespace (the *init*); the parent waits for it and
//!    passes on how the command ended;
//! 3. the init makes its mounts private, mounts a `/proc` that shows only the namespace, masks the
//!    runner's temp directory, the docker socket and qa-loop's own files, makes `.git` and the out
//!    dir read-only, drops privileges (`no_new_privs`, every capability, back to the job's user),
//!    forks the command and reaps until the command ends;
//! 4. when the init exits, the kernel kills every process left in the namespace: nothing the
//!    command started outlives it.

use std::ffi::CString;
use std::os::unix::ffi::OsStrExt;
use std::path::Path;

use nix::libc;

use super::spec::{Kind, Spec};

/// The first argument that makes the binary the helper.
pub const ARG: &str = "__sandbox-exec";

/// Exit code of the helper when it cannot confine the command (nothing of the command ran).
pub const SETUP_FAILED: i32 = 125;

/// Runs the helper when the process was started as one; returns otherwise.
pub fn run_if_helper() {
    if std::env::args_os().nth(1).is_some_and(|a| a == ARG) {
        let code = match helper() {
            Ok(code) => code,
            Err(e) => {
                eprintln!("qa-loop sandbox: {e}");
                SETUP_FAILED
            }
        };
        std::process::exit(code);
    }
}

fn os_error(what: &str) -> String {
    format!("{what}: {}", std::io::Error::last_os_error())
}

fn check(ret: libc::c_int, what: &str) -> Result<(), String> {
    if ret < 0 { Err(os_error(what)) } else { Ok(()) }
}

fn cstr(s: impl AsRef<std::ffi::OsStr>) -> Result<CString, String> {
    CString::new(s.as_ref().as_bytes()).map_err(|_| "a NUL byte in a path or argument".to_string())
}

/// The largest spec the helper reads.
const MAX_SPEC: usize = 16 << 20;

/// The spec, framed as `<length>\n<JSON>` on standard input, read byte-exact and unbuffered:
/// what follows the frame is the command's own input (an MCP server's transport), left unread.
fn read_spec() -> Result<Spec, String> {
    let read = |buf: &mut [u8]| -> Result<usize, String> {
        loop {
            // SAFETY: reading into a live buffer of its own length.
            let n = unsafe { libc::read(0, buf.as_mut_ptr().cast(), buf.len()) };
            if n >= 0 {
                return Ok(n as usize);
            }
            if std::io::Error::last_os_error().kind() != std::io::ErrorKind::Interrupted {
                return Err(os_error("cannot read the command"));
            }
        }
    };
    let mut digits = Vec::new();
    let mut byte = [0u8; 1];
    loop {
        if read(&mut byte)? == 0 || digits.len() > 12 {
            return Err("cannot read the command: no frame".into());
        }
        match byte[0] {
            b'\n' => break,
            d @ b'0'..=b'9' => digits.push(d),
            _ => return Err("cannot read the command: a bad frame".into()),
        }
    }
    let len: usize = String::from_utf8_lossy(&digits)
        .parse()
        .map_err(|_| "cannot read the command: a bad frame".to_string())?;
    if len > MAX_SPEC {
        return Err("cannot read the command: too large".into());
    }
    let mut input = vec![0u8; len];
    let mut got = 0;
    while got < len {
        let n = read(&mut input[got..])?;
        if n == 0 {
            return Err("cannot read the command: cut short".into());
        }
        got += n;
    }
    serde_json::from_slice(&input).map_err(|e| format!("cannot read the command: {e}"))
}

/// The frame [`read_spec`] reads.
pub fn frame(spec: &Spec) -> Vec<u8> {
    let json = serde_json::to_vec(spec).unwrap_or_default();
    let mut out = format!("{}\n", json.len()).into_bytes();
    out.extend_from_slice(&json);
    out
}

fn helper() -> Result<i32, String> {
    let spec = read_spec()?;
    if !spec.stdin {
        // The command's standard input is empty, as outside the sandbox.
        let null = cstr("/dev/null")?;
        // SAFETY: plain syscalls on owned values; this process has one thread.
        unsafe {
            let fd = libc::open(null.as_ptr(), libc::O_RDONLY);
            check(fd, "cannot open /dev/null")?;
            check(libc::dup2(fd, 0), "cannot redirect standard input")?;
            if fd != 0 {
                libc::close(fd);
            }
        }
    }
    let (uid, gid) = unsafe { (libc::getuid(), libc::getgid()) };
    let mut flags = libc::CLONE_NEWPID | libc::CLONE_NEWNS;
    if spec.kind == Kind::UserNamespace {
        flags |= libc::CLONE_NEWUSER;
    }
    if !spec.network {
        flags |= libc::CLONE_NEWNET;
    }
    // SAFETY: unshare affects this process only.
    check(
        unsafe { libc::unshare(flags) },
        "cannot create the namespaces",
    )?;
    if spec.kind == Kind::UserNamespace {
        // The job's user (and group) map to themselves: the command keeps its ids.
        std::fs::write("/proc/self/setgroups", "deny")
            .map_err(|e| format!("cannot deny setgroups: {e}"))?;
        std::fs::write("/proc/self/uid_map", format!("{uid} {uid} 1\n"))
            .map_err(|e| format!("cannot map the user: {e}"))?;
        std::fs::write("/proc/self/gid_map", format!("{gid} {gid} 1\n"))
            .map_err(|e| format!("cannot map the group: {e}"))?;
    }
    let mut report = [0 as libc::c_int; 2];
    // SAFETY: a pipe into an array of two ints.
    check(
        unsafe { libc::pipe2(report.as_mut_ptr(), libc::O_CLOEXEC) },
        "cannot make a pipe",
    )?;
    // SAFETY: one thread; the child only runs this function's code and exits.
    let pid = unsafe { libc::fork() };
    check(pid, "cannot fork the namespace's first process")?;
    if pid == 0 {
        unsafe { libc::close(report[0]) };
        let code = match init(&spec, report[1]) {
            Ok(code) => code,
            Err(e) => {
                eprintln!("qa-loop sandbox: {e}");
                SETUP_FAILED
            }
        };
        std::process::exit(code);
    }
    unsafe { libc::close(report[1]) };
    // The signals qa-loop sends to the command's process group reach the command directly (it
    // stays in the group); this process only waits, so it ignores them instead of dying and
    // leaving the init behind (sudo also relays the signals it gets: they are ignored here).
    for sig in [libc::SIGINT, libc::SIGTERM, libc::SIGHUP, libc::SIGQUIT] {
        unsafe { libc::signal(sig, libc::SIG_IGN) };
    }
    if matches!(spec.kind, Kind::Root | Kind::Sudo) {
        // Nothing left to do with privileges here.
        drop_privileges(&spec)?;
    }
    let status = wait_for(pid);
    let mut signal = [0u8; 1];
    // SAFETY: reading one byte into a local buffer.
    let got = unsafe { libc::read(report[0], signal.as_mut_ptr().cast(), 1) };
    if got == 1 && signal[0] > 0 {
        let sig = libc::c_int::from(signal[0]);
        // End the same way the command did, so qa-loop reads the same outcome.
        unsafe {
            libc::signal(sig, libc::SIG_DFL);
            let mut set: libc::sigset_t = std::mem::zeroed();
            libc::sigemptyset(&mut set);
            libc::sigaddset(&mut set, sig);
            libc::sigprocmask(libc::SIG_UNBLOCK, &set, std::ptr::null_mut());
            libc::raise(sig);
        }
        return Ok(128 + sig);
    }
    Ok(status)
}

/// Waits for `pid` and returns its exit code (128 + signal when killed).
fn wait_for(pid: libc::pid_t) -> i32 {
    loop {
        let mut status = 0;
        // SAFETY: waiting on our own child.
        let r = unsafe { libc::waitpid(pid, &mut status, 0) };
        if r == pid {
            if libc::WIFEXITED(status) {
                return libc::WEXITSTATUS(status);
            }
            if libc::WIFSIGNALED(status) {
                return 128 + libc::WTERMSIG(status);
            }
            continue;
        }
        if r < 0 && std::io::Error::last_os_error().raw_os_error() != Some(libc::EINTR) {
            return SETUP_FAILED;
        }
    }
}

/// PID 1 of the namespace: sets the confinement up, starts the command, reaps until it ends.
fn init(spec: &Spec, report: libc::c_int) -> Result<i32, String> {
    let root = cstr("/")?;
    // SAFETY: mount(2) with valid C strings; this process is alone in its mount namespace.
    check(
        unsafe {
            libc::mount(
                std::ptr::null(),
                root.as_ptr(),
                std::ptr::null(),
                libc::MS_REC | libc::MS_PRIVATE,
                std::ptr::null(),
            )
        },
        "cannot make the mounts private",
    )?;
    mount_proc()?;
    for path in &spec.masks {
        mask(path)?;
    }
    for path in &spec.read_only {
        read_only(path)?;
    }
    if !spec.network {
        loopback_up()?;
    }
    if matches!(spec.kind, Kind::Root | Kind::Sudo) {
        drop_privileges(spec)?;
    } else if spec.uid == 0 {
        drop_capabilities()?;
    }
    // SAFETY: prctl on this process.
    check(
        unsafe { libc::prctl(libc::PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) },
        "cannot set no_new_privs",
    )?;
    let argv: Vec<CString> = spec.argv.iter().map(cstr).collect::<Result<_, _>>()?;
    if argv.is_empty() {
        return Err("no command".into());
    }
    let env: Vec<CString> = spec
        .env
        .iter()
        .map(|(k, v)| cstr(format!("{k}={v}")))
        .collect::<Result<_, _>>()?;
    let cwd = cstr(&spec.cwd)?;
    let mut argv_ptrs: Vec<*const libc::c_char> = argv.iter().map(|a| a.as_ptr()).collect();
    argv_ptrs.push(std::ptr::null());
    let mut env_ptrs: Vec<*const libc::c_char> = env.iter().map(|a| a.as_ptr()).collect();
    env_ptrs.push(std::ptr::null());
    // SAFETY: one thread; the child execs or exits.
    let pid = unsafe { libc::fork() };
    check(pid, "cannot start the command")?;
    if pid == 0 {
        // SAFETY: the command's process: default signal handling, then exec.
        unsafe {
            libc::close(report);
            for sig in 1..32 {
                libc::signal(sig, libc::SIG_DFL);
            }
            let mut set: libc::sigset_t = std::mem::zeroed();
            libc::sigemptyset(&mut set);
            libc::sigprocmask(libc::SIG_SETMASK, &set, std::ptr::null_mut());
            if libc::chdir(cwd.as_ptr()) < 0 {
                eprintln!(
                    "{}",
                    os_error(&format!("cannot enter {}", spec.cwd.display()))
                );
                libc::_exit(SETUP_FAILED);
            }
            libc::execve(argv_ptrs[0], argv_ptrs.as_ptr(), env_ptrs.as_ptr());
            eprintln!("{}", os_error(&format!("cannot run {}", spec.argv[0])));
            libc::_exit(127);
        }
    }
    // Reap everything (orphans are reparented here) until the command ends.
    loop {
        let mut status = 0;
        // SAFETY: waiting on children of this process.
        let r = unsafe { libc::waitpid(-1, &mut status, 0) };
        if r == pid {
            if libc::WIFEXITED(status) {
                return Ok(libc::WEXITSTATUS(status));
            }
            if libc::WIFSIGNALED(status) {
                let sig = libc::WTERMSIG(status);
                let byte = [sig as u8];
                // SAFETY: writing one byte from a local buffer.
                unsafe { libc::write(report, byte.as_ptr().cast(), 1) };
                return Ok(128 + sig);
            }
        } else if r < 0 && std::io::Error::last_os_error().raw_os_error() != Some(libc::EINTR) {
            return Ok(SETUP_FAILED);
        }
    }
}

fn mount_proc() -> Result<(), String> {
    let (proc_, target) = (cstr("proc")?, cstr("/proc")?);
    // SAFETY: mount(2) with valid C strings.
    check(
        unsafe {
            libc::mount(
                proc_.as_ptr(),
                target.as_ptr(),
                proc_.as_ptr(),
                libc::MS_NOSUID | libc::MS_NODEV | libc::MS_NOEXEC,
                std::ptr::null(),
            )
        },
        "cannot mount /proc for the namespace",
    )
}

/// Hides `path`: a directory under an empty read-only tmpfs, a file (socket, credential) under
/// `/dev/null`.
fn mask(path: &Path) -> Result<(), String> {
    let Ok(meta) = std::fs::metadata(path) else {
        return Ok(());
    };
    let target = cstr(path)?;
    let what = format!("cannot hide {}", path.display());
    // SAFETY: mount(2) with valid C strings.
    if meta.is_dir() {
        let (fs, data) = (cstr("tmpfs")?, cstr("size=4k,mode=000")?);
        check(
            unsafe {
                libc::mount(
                    fs.as_ptr(),
                    target.as_ptr(),
                    fs.as_ptr(),
                    libc::MS_RDONLY | libc::MS_NOSUID | libc::MS_NODEV | libc::MS_NOEXEC,
                    data.as_ptr().cast(),
                )
            },
            &what,
        )
    } else {
        let null = cstr("/dev/null")?;
        check(
            unsafe {
                libc::mount(
                    null.as_ptr(),
                    target.as_ptr(),
                    std::ptr::null(),
                    libc::MS_BIND,
                    std::ptr::null(),
                )
            },
            &what,
        )
    }
}

/// Makes `path` (and what is mounted below it) read-only in this namespace.
fn read_only(path: &Path) -> Result<(), String> {
    if std::fs::symlink_metadata(path).is_err() {
        return Ok(());
    }
    let target = cstr(path)?;
    let what = format!("cannot make {} read-only", path.display());
    // SAFETY: mount(2) and statvfs(2) with valid C strings and a local buffer.
    unsafe {
        check(
            libc::mount(
                target.as_ptr(),
                target.as_ptr(),
                std::ptr::null(),
                libc::MS_BIND | libc::MS_REC,
                std::ptr::null(),
            ),
            &what,
        )?;
        // A remount must keep the flags the mount already has (a user namespace may not clear
        // nosuid, nodev, noexec or atime flags it inherited).
        let mut st: libc::statvfs = std::mem::zeroed();
        check(libc::statvfs(target.as_ptr(), &mut st), &what)?;
        let mut flags = libc::MS_BIND | libc::MS_REMOUNT | libc::MS_RDONLY;
        // statvfs(3)'s ST_* values, the kernel's on every Linux libc (musl's crate lacks some).
        for (st_flag, ms_flag) in [
            (0x2, libc::MS_NOSUID),
            (0x4, libc::MS_NODEV),
            (0x8, libc::MS_NOEXEC),
            (0x400, libc::MS_NOATIME),
            (0x800, libc::MS_NODIRATIME),
            (0x1000, libc::MS_RELATIME),
        ] {
            if st.f_flag as u64 & st_flag != 0 {
                flags |= ms_flag;
            }
        }
        check(
            libc::mount(
                std::ptr::null(),
                target.as_ptr(),
                std::ptr::null(),
                flags,
                std::ptr::null(),
            ),
            &what,
        )
    }
}

/// Brings up `lo` in a fresh network namespace (local servers keep working).
fn loopback_up() -> Result<(), String> {
    // SAFETY: a socket and two ioctls on a zeroed ifreq naming "lo".
    unsafe {
        let sock = libc::socket(libc::AF_INET, libc::SOCK_DGRAM | libc::SOCK_CLOEXEC, 0);
        check(sock, "cannot open a socket for loopback")?;
        let mut req: libc::ifreq = std::mem::zeroed();
        for (i, b) in b"lo".iter().enumerate() {
            req.ifr_name[i] = *b as libc::c_char;
        }
        // The request's type differs between glibc and musl.
        let got = libc::ioctl(sock, libc::SIOCGIFFLAGS as _, &mut req);
        if got >= 0 {
            req.ifr_ifru.ifru_flags |= (libc::IFF_UP | libc::IFF_RUNNING) as libc::c_short;
            libc::ioctl(sock, libc::SIOCSIFFLAGS as _, &req);
        }
        libc::close(sock);
    }
    Ok(())
}

/// Root's way back to the job's user: supplementary groups, group, user (a non-root user loses
/// every capability at `setresuid`); when the job's user is root, every capability is dropped.
fn drop_privileges(spec: &Spec) -> Result<(), String> {
    if spec.uid == 0 {
        return drop_capabilities();
    }
    let groups: Vec<libc::gid_t> = spec.groups.clone();
    // SAFETY: setgroups/setresgid/setresuid with owned values.
    unsafe {
        if libc::geteuid() != 0 {
            return Ok(());
        }
        check(
            libc::setgroups(groups.len(), groups.as_ptr()),
            "cannot set the groups",
        )?;
        check(
            libc::setresgid(spec.gid, spec.gid, spec.gid),
            "cannot drop to the job's group",
        )?;
        check(
            libc::setresuid(spec.uid, spec.uid, spec.uid),
            "cannot drop to the job's user",
        )?;
    }
    Ok(())
}

/// Clears the bounding, ambient, inheritable, permitted and effective capability sets.
fn drop_capabilities() -> Result<(), String> {
    #[repr(C)]
    struct Header {
        version: u32,
        pid: libc::c_int,
    }
    #[repr(C)]
    #[derive(Clone, Copy)]
    struct Data {
        effective: u32,
        permitted: u32,
        inheritable: u32,
    }
    const VERSION_3: u32 = 0x2008_0522;
    // SAFETY: prctl and capset with local, correctly laid out buffers.
    unsafe {
        for cap in 0..64 {
            // EINVAL past the last capability the kernel knows.
            libc::prctl(libc::PR_CAPBSET_DROP, cap, 0, 0, 0);
        }
        libc::prctl(
            libc::PR_CAP_AMBIENT,
            libc::PR_CAP_AMBIENT_CLEAR_ALL,
            0,
            0,
            0,
        );
        let header = Header {
            version: VERSION_3,
            pid: 0,
        };
        let data = [Data {
            effective: 0,
            permitted: 0,
            inheritable: 0,
        }; 2];
        check(
            libc::syscall(libc::SYS_capset, &header, data.as_ptr()) as libc::c_int,
            "cannot drop capabilities",
        )?;
    }
    Ok(())
}
