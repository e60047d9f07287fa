//! The server's settings: a TOML file (`--config FILE`) and the command line's flags on top
//! of it, the environment's user beside the file's.
//!
//! ```toml
//! listen = "127.0.0.1:5433"         # PostgreSQL protocol
//! flight_listen = "127.0.0.1:50051" # Arrow Flight SQL
//! trust_local = false               # no password needed (loopback only)
//! init = "init.sql"                 # run at start-up
//! allow_read = ["/data/in"]         # directories clients may read files in (none by default)
//! allow_write = ["/data/out"]       # and write files in
//!
//! [tls]
//! cert = "server.crt"               # PEM certificate chain
//! key = "server.key"                # PEM private key
//!
//! [limits]
//! max_connections = 100
//! max_message_bytes = 67108864
//! copy_buffer_bytes = 67108864
//!
//! [[users]]
//! name = "alice"
//! password = "secret"
//! ```

use std::net::SocketAddr;
use std::path::{Path, PathBuf};

use serde::Deserialize;

use crate::users::Users;

/// The PostgreSQL protocol's default address of `wireload serve`.
pub const DEFAULT_LISTEN: &str = "127.0.0.1:5433";
/// Arrow Flight SQL's default address.
pub const DEFAULT_FLIGHT_LISTEN: &str = "127.0.0.1:50051";

/// Certificate and key files (PEM) for TLS on both protocols.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TlsFiles {
    /// The certificate chain, leaf first.
    pub cert: PathBuf,
    /// The private key (PKCS#8, PKCS#1 or SEC1).
    pub key: PathBuf,
}

/// Limits that keep one client from taking the server down.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct Limits {
    /// Connections at once, per protocol; more are refused with an error.
    pub max_connections: usize,
    /// The largest protocol message accepted (a longer one closes the connection).
    pub max_message_bytes: usize,
    /// COPY FROM STDIN data a connection may hold before the loader has taken it, in whole
    /// 16 MiB blocks, at least one (the client waits when it is full).
    pub copy_buffer_bytes: usize,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            max_connections: 100,
            max_message_bytes: 64 << 20,
            copy_buffer_bytes: 64 << 20,
        }
    }
}

/// Everything `wireload serve` needs to start.
#[derive(Debug, Clone)]
pub struct ServeConfig {
    /// The PostgreSQL protocol's address.
    pub listen: SocketAddr,
    /// Arrow Flight SQL's address (`None`: not served).
    pub flight_listen: Option<SocketAddr>,
    /// Users and passwords.
    pub users: Users,
    /// Clients on the loopback interface need no password (`--trust-local`).
    pub trust_local: bool,
    /// TLS for both protocols.
    pub tls: Option<TlsFiles>,
    /// Connection and message limits.
    pub limits: Limits,
    /// A SQL script run before the first client is accepted.
    pub init: Option<PathBuf>,
    /// Directories whose files clients with the privilege may read (`--allow-read`).
    pub allow_read: Vec<PathBuf>,
    /// Directories in which clients with the privilege may write (`--allow-write`).
    pub allow_write: Vec<PathBuf>,
}

impl Default for ServeConfig {
    fn default() -> Self {
        ServeConfig {
            listen: DEFAULT_LISTEN.parse().expect("a valid address"),
            flight_listen: Some(DEFAULT_FLIGHT_LISTEN.parse().expect("a valid address")),
            users: Users::new(),
            trust_local: false,
            tls: None,
            limits: Limits::default(),
            init: None,
            allow_read: Vec::new(),
            allow_write: Vec::new(),
        }
    }
}

/// A config file that cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    /// The file cannot be read.
    #[error("cannot read the config file {path}: {source}")]
    Read {
        /// the file
        path: PathBuf,
        /// why
        source: std::io::Error,
    },
    /// The file is not valid TOML for the server (an unknown key is an error too).
    #[error("config file {path}: {message}")]
    Invalid {
        /// the file
        path: PathBuf,
        /// TOML's message, with the line
        message: String,
    },
}

/// The file's shape.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct FileConfig {
    listen: Option<SocketAddr>,
    flight_listen: Option<SocketAddr>,
    trust_local: Option<bool>,
    init: Option<PathBuf>,
    #[serde(default)]
    allow_read: Vec<PathBuf>,
    #[serde(default)]
    allow_write: Vec<PathBuf>,
    tls: Option<TlsFiles>,
    limits: Option<Limits>,
    #[serde(default)]
    users: Vec<FileUser>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct FileUser {
    name: String,
    password: String,
}

impl ServeConfig {
    /// The defaults overlaid with the TOML file at `path`; relative paths in it (TLS files,
    /// the init script) are taken from the file's folder.
    pub fn from_file(path: &Path) -> Result<ServeConfig, ConfigError> {
        let text = std::fs::read_to_string(path).map_err(|source| ConfigError::Read {
            path: path.to_path_buf(),
            source,
        })?;
        Self::from_toml(&text, path)
    }

    /// The defaults overlaid with the TOML `text` (of the file `path`).
    pub fn from_toml(text: &str, path: &Path) -> Result<ServeConfig, ConfigError> {
        let file: FileConfig = toml::from_str(text).map_err(|e| ConfigError::Invalid {
            path: path.to_path_buf(),
            message: e.to_string(),
        })?;
        let base = path.parent().unwrap_or(Path::new("."));
        let resolve = |p: PathBuf| if p.is_relative() { base.join(p) } else { p };
        let mut config = ServeConfig::default();
        if let Some(l) = file.listen {
            config.listen = l;
        }
        if let Some(l) = file.flight_listen {
            config.flight_listen = Some(l);
        }
        if let Some(t) = file.trust_local {
            config.trust_local = t;
        }
        config.init = file.init.map(resolve);
        config.allow_read = file.allow_read.into_iter().map(resolve).collect();
        config.allow_write = file.allow_write.into_iter().map(resolve).collect();
        config.tls = file.tls.map(|t| TlsFiles {
            cert: resolve(t.cert),
            key: resolve(t.key),
        });
        if let Some(limits) = file.limits {
            config.limits = limits;
        }
        for u in file.users {
            if u.name.is_empty() || u.password.is_empty() {
                return Err(ConfigError::Invalid {
                    path: path.to_path_buf(),
                    message: "a user needs a name and a password".into(),
                });
            }
            config.users.add(u.name, u.password);
        }
        Ok(config)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn file_overlays_defaults() {
        let c = ServeConfig::from_toml(
            r#"
            listen = "0.0.0.0:6000"
            init = "init.sql"
            allow_read = ["in", "/abs/in"]
            [tls]
            cert = "c.pem"
            key = "/abs/k.pem"
            [limits]
            max_connections = 3
            [[users]]
            name = "alice"
            password = "pw"
            "#,
            Path::new("/etc/wl/serve.toml"),
        )
        .unwrap();
        assert_eq!(c.listen, "0.0.0.0:6000".parse().unwrap());
        assert_eq!(
            c.flight_listen,
            Some(DEFAULT_FLIGHT_LISTEN.parse().unwrap())
        );
        assert_eq!(c.init.as_deref(), Some(Path::new("/etc/wl/init.sql")));
        assert_eq!(
            c.allow_read,
            [Path::new("/etc/wl/in"), Path::new("/abs/in")]
        );
        assert!(c.allow_write.is_empty());
        let tls = c.tls.unwrap();
        assert_eq!(tls.cert, Path::new("/etc/wl/c.pem"));
        assert_eq!(tls.key, Path::new("/abs/k.pem"));
        assert_eq!(c.limits.max_connections, 3);
        assert_eq!(
            c.limits.max_message_bytes,
            Limits::default().max_message_bytes
        );
        assert_eq!(c.users.password("alice"), Some("pw"));
        assert!(!c.trust_local);
    }

    #[test]
    fn unknown_keys_and_bad_users_are_errors() {
        let p = Path::new("x.toml");
        let e = ServeConfig::from_toml("lisen = \"1.2.3.4:5\"", p).unwrap_err();
        assert!(e.to_string().contains("lisen"), "{e}");
        let e = ServeConfig::from_toml("[[users]]\nname = \"a\"\npassword = \"\"", p).unwrap_err();
        assert!(e.to_string().contains("password"), "{e}");
    }
}
