//! A connection attempt bounded as a whole by `connectTimeoutMs`.
//!
//! The driver's own timeout covers only the TCP connect of each address.
//! A server, or anything else listening on its port, that accepts the
//! connection and never answers the startup would hold `open`, a pool
//! `get` or a writer lock for ever. So the attempt runs on a thread of its
//! own, and the caller waits for it at most the timeout (once per host of
//! the URL, as libpq counts it). An attempt that outlives its caller is
//! abandoned: its thread ends when the server answers (the connection is
//! then closed) or closes the socket (PostgreSQL ends an unfinished startup
//! after its `authentication_timeout`, 60 s by default).
//!
//! Abandoned attempts are counted; while [`MAX_ABANDONED`] of them still
//! wait, a new attempt is refused at once instead of starting another
//! thread, so a host that retries against a silent port holds a bounded
//! number of threads and sockets.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use parking_lot::{Condvar, Mutex};
use postgres::Client;

use super::config::Resolved;
use super::tls::Connector;
use crate::error::{Error, Result};

/// Most abandoned attempts a process keeps waiting before it refuses new
/// ones.
pub const MAX_ABANDONED: usize = 16;

/// Abandoned attempts of this process still waiting for their server.
static ABANDONED: AtomicUsize = AtomicUsize::new(0);

/// What became of an attempt, shared by its thread and its caller.
enum Attempt {
    Running,
    Finished(Box<std::result::Result<Client, postgres::Error>>),
    /// The caller gave up; the thread drops what it gets.
    Abandoned,
}

/// Connects as `r` says, within its connect timeout per host. A driver
/// error comes back as the driver's; running out of time is an `io` error
/// naming the server and the limit.
pub fn connect_within(
    r: &Resolved,
    tls: &Connector,
) -> Result<std::result::Result<Client, postgres::Error>> {
    let per_host =
        r.pg.get_connect_timeout()
            .copied()
            .unwrap_or(Duration::from_secs(5));
    let hosts = r.pg.get_hosts().len().max(1) as u32;
    connect_counted(r, tls, per_host * hosts, &ABANDONED, MAX_ABANDONED)
}

/// [`connect_within`] with the limit, the counter of abandoned attempts and
/// its cap given (the tests use their own).
fn connect_counted(
    r: &Resolved,
    tls: &Connector,
    limit: Duration,
    abandoned: &'static AtomicUsize,
    cap: usize,
) -> Result<std::result::Result<Client, postgres::Error>> {
    let waiting = abandoned.load(Ordering::SeqCst);
    if waiting >= cap {
        return Err(Error::io_msg(format!(
            "{}: cannot connect: {waiting} earlier connection attempts of this process still wait for an answer (each given up after the connect timeout); not starting another",
            r.label
        )));
    }
    let shared = Arc::new((Mutex::new(Attempt::Running), Condvar::new()));
    let (config, tls_for_thread, theirs) = (r.pg.clone(), tls.clone(), shared.clone());
    std::thread::Builder::new()
        .name("dsh-pg-connect".into())
        .spawn(move || {
            let result = config.connect(tls_for_thread);
            let (state, done) = &*theirs;
            let mut state = state.lock();
            match *state {
                Attempt::Abandoned => {
                    abandoned.fetch_sub(1, Ordering::SeqCst);
                    drop(state);
                    drop(result);
                }
                _ => {
                    *state = Attempt::Finished(Box::new(result));
                    done.notify_one();
                }
            }
        })
        .map_err(|e| Error::io(format!("{}: cannot start a connection attempt", r.label), e))?;
    let deadline = Instant::now() + limit;
    let (state, done) = &*shared;
    let mut state = state.lock();
    while matches!(*state, Attempt::Running) {
        if done.wait_until(&mut state, deadline).timed_out() {
            break;
        }
    }
    match std::mem::replace(&mut *state, Attempt::Abandoned) {
        Attempt::Finished(result) => Ok(*result),
        _ => {
            abandoned.fetch_add(1, Ordering::SeqCst);
            Err(Error::io_msg(format!(
                "{}: cannot connect: no connection within {} ms (connectTimeoutMs); the server, or something listening in its place, did not answer in time",
                r.label,
                limit.as_millis()
            )))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::backend::postgres::PostgresConfig;
    use crate::backend::postgres::tls::connector;

    fn resolved(port: u16) -> (Resolved, Connector) {
        let r = PostgresConfig::new(format!("postgresql://dsh@127.0.0.1:{port}/nowhere"))
            .resolve()
            .unwrap();
        let tls = connector(&r).unwrap();
        (r, tls)
    }

    /// A port that accepts connections and never answers: each attempt
    /// gives up at its limit and is counted while it waits; at the cap a new
    /// one is refused at once; when the port closes, the abandoned attempts
    /// end and are no longer counted, and attempts start again.
    #[test]
    fn a_silent_server_is_given_up_on_and_abandoned_attempts_are_capped() {
        static ABANDONED: AtomicUsize = AtomicUsize::new(0);
        let silent = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let port = silent.local_addr().unwrap().port();
        let (r, tls) = resolved(port);
        let limit = Duration::from_millis(200);
        for n in 1..=2 {
            let started = Instant::now();
            let e = connect_counted(&r, &tls, limit, &ABANDONED, 2)
                .err()
                .unwrap();
            assert!(started.elapsed() >= limit);
            assert_eq!(e.kind(), crate::ErrorKind::Io);
            assert_eq!(
                e.to_string(),
                format!(
                    "{}: cannot connect: no connection within 200 ms (connectTimeoutMs); the server, or something listening in its place, did not answer in time",
                    r.label
                )
            );
            assert_eq!(ABANDONED.load(Ordering::SeqCst), n);
        }
        let started = Instant::now();
        let e = connect_counted(&r, &tls, limit, &ABANDONED, 2)
            .err()
            .unwrap();
        assert!(started.elapsed() < limit, "refused at once");
        assert_eq!(e.kind(), crate::ErrorKind::Io);
        assert!(
            e.to_string().ends_with(
                "cannot connect: 2 earlier connection attempts of this process still wait for an answer (each given up after the connect timeout); not starting another"
            ),
            "{e}"
        );
        // The port closes: the waiting attempts fail and end.
        drop(silent);
        let deadline = Instant::now() + Duration::from_secs(30);
        while ABANDONED.load(Ordering::SeqCst) > 0 && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(10));
        }
        assert_eq!(ABANDONED.load(Ordering::SeqCst), 0);
        // Nothing listens now: the driver's own refusal, in time.
        let refused = connect_counted(&r, &tls, Duration::from_secs(30), &ABANDONED, 2).unwrap();
        assert!(refused.is_err());
        assert_eq!(ABANDONED.load(Ordering::SeqCst), 0);
    }
}
