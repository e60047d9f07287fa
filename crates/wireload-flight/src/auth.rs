//! Who is calling: HTTP Basic credentials checked against the roles' verifiers, bearer tokens handed
//! out by the handshake, and (with `--trust-local`) loopback clients without credentials.

use std::collections::HashMap;
use std::net::{IpAddr, SocketAddr};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use base64::Engine;
use base64::alphabet::STANDARD as ALPHABET;
use base64::engine::{DecodePaddingMode, GeneralPurpose, GeneralPurposeConfig};
use tonic::metadata::MetadataMap;
use tonic::{Request, Status};
use wireload_sql::Roles;

/// The name a trusted loopback client without credentials acts as.
pub const LOCAL_USER: &str = "local";

/// A token unused this long is forgotten (the client handshakes again).
const TOKEN_IDLE: Duration = Duration::from_secs(24 * 3600);

/// Tokens held at once; a handshake beyond this (after forgetting idle ones) is refused.
const MAX_TOKENS: usize = 100_000;

/// A token's owner and when it was last shown.
struct TokenEntry {
    user: String,
    last_used: Instant,
}

/// Base64 with or without padding (Go's Flight client sends Basic credentials unpadded).
const BASE64: GeneralPurpose = GeneralPurpose::new(
    &ALPHABET,
    GeneralPurposeConfig::new().with_decode_padding_mode(DecodePaddingMode::Indifferent),
);

/// The credentials a call carried.
#[derive(Debug, PartialEq, Eq)]
pub enum Credentials {
    /// `authorization: Basic base64(user:password)`.
    Basic {
        /// the user name
        user: String,
        /// the password
        password: String,
    },
    /// `authorization: Bearer <token>`.
    Bearer(String),
    /// No `authorization` header.
    None,
}

/// Reads the `authorization` header of `metadata`.
pub fn credentials(metadata: &MetadataMap) -> Result<Credentials, Status> {
    let Some(value) = metadata.get("authorization") else {
        return Ok(Credentials::None);
    };
    let value = value
        .to_str()
        .map_err(|_| Status::unauthenticated("the authorization header is not text"))?
        .trim();
    let (scheme, rest) = value.split_once(' ').unwrap_or((value, ""));
    let rest = rest.trim();
    if scheme.eq_ignore_ascii_case("basic") {
        let decoded = BASE64
            .decode(rest)
            .map_err(|_| Status::unauthenticated("the Basic credentials are not base64"))?;
        let text = String::from_utf8(decoded)
            .map_err(|_| Status::unauthenticated("the Basic credentials are not UTF-8"))?;
        let (user, password) = text.split_once(':').ok_or_else(|| {
            Status::unauthenticated("the Basic credentials are not user:password")
        })?;
        Ok(Credentials::Basic {
            user: user.to_string(),
            password: password.to_string(),
        })
    } else if scheme.eq_ignore_ascii_case("bearer") {
        Ok(Credentials::Bearer(rest.to_string()))
    } else {
        Err(Status::unauthenticated(
            "unsupported authorization scheme (use Basic or Bearer)",
        ))
    }
}

/// True for a loopback peer (IPv4-mapped IPv6 addresses included).
pub fn is_loopback(addr: Option<SocketAddr>) -> bool {
    match addr.map(|a| a.ip()) {
        Some(IpAddr::V4(v4)) => v4.is_loopback(),
        Some(IpAddr::V6(v6)) => v6
            .to_ipv4_mapped()
            .map_or(v6.is_loopback(), |v4| v4.is_loopback()),
        None => false,
    }
}

/// Roles, tokens and the trust of loopback clients.
pub struct Auth {
    roles: Arc<Roles>,
    trust_local: bool,
    tokens: Mutex<HashMap<String, TokenEntry>>,
}

impl Auth {
    /// Checks against the verifiers of `roles`; with `trust_local`, loopback clients need
    /// no credentials.
    pub fn new(roles: Arc<Roles>, trust_local: bool) -> Self {
        Auth {
            roles,
            trust_local,
            tokens: Mutex::new(HashMap::new()),
        }
    }

    /// The user a call acts as, or `unauthenticated`.
    #[allow(clippy::result_large_err)]
    pub fn authorize<T>(&self, request: &Request<T>) -> Result<String, Status> {
        match credentials(request.metadata())? {
            Credentials::Bearer(token) => self.token_user(&token).ok_or_else(|| {
                Status::unauthenticated("unknown or expired bearer token (handshake again)")
            }),
            Credentials::Basic { user, password } => self.check_password(&user, &password),
            Credentials::None if self.trust_local && is_loopback(request.remote_addr()) => {
                Ok(LOCAL_USER.to_string())
            }
            Credentials::None => Err(Status::unauthenticated(
                "credentials required: handshake with Basic auth (user and password) and send \
                 the bearer token it returns",
            )),
        }
    }

    /// The user `user` when `password` is theirs.
    #[allow(clippy::result_large_err)]
    pub fn check_password(&self, user: &str, password: &str) -> Result<String, Status> {
        let known = self
            .roles
            .login(user)
            .ok()
            .and_then(|role| role.verifier)
            .is_some_and(|v| v.verify(password));
        if known {
            Ok(user.to_string())
        } else {
            Err(Status::unauthenticated("wrong user name or password"))
        }
    }

    /// A new bearer token (32 random bytes, hex) for `user`.
    #[allow(clippy::result_large_err)]
    pub fn issue_token(&self, user: &str) -> Result<String, Status> {
        let bytes: [u8; 32] = rand::random();
        let token: String = bytes.iter().map(|b| format!("{b:02x}")).collect();
        let now = Instant::now();
        let mut tokens = self.tokens.lock().unwrap_or_else(|e| e.into_inner());
        if tokens.len() >= MAX_TOKENS {
            tokens.retain(|_, e| now.duration_since(e.last_used) < TOKEN_IDLE);
            if tokens.len() >= MAX_TOKENS {
                return Err(Status::resource_exhausted(
                    "too many sessions: try again later",
                ));
            }
        }
        tokens.insert(
            token.clone(),
            TokenEntry {
                user: user.to_string(),
                last_used: now,
            },
        );
        Ok(token)
    }

    /// The owner of `token`, when it is known and not idle too long.
    fn token_user(&self, token: &str) -> Option<String> {
        let mut tokens = self.tokens.lock().unwrap_or_else(|e| e.into_inner());
        let entry = tokens.get_mut(token)?;
        let now = Instant::now();
        if now.duration_since(entry.last_used) >= TOKEN_IDLE {
            tokens.remove(token);
            return None;
        }
        entry.last_used = now;
        Some(entry.user.clone())
    }

    /// True when loopback clients need no credentials.
    pub fn trusts_local(&self) -> bool {
        self.trust_local
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tonic::metadata::MetadataValue;

    fn with_header(value: &str) -> MetadataMap {
        let mut m = MetadataMap::new();
        m.insert("authorization", MetadataValue::try_from(value).unwrap());
        m
    }

    #[test]
    fn reads_basic_and_bearer() {
        let basic = format!("Basic {}", BASE64.encode("ann:s3:cret"));
        assert_eq!(
            credentials(&with_header(&basic)).unwrap(),
            Credentials::Basic {
                user: "ann".into(),
                password: "s3:cret".into()
            }
        );
        // unpadded, as Go's Flight client sends it
        let unpadded = format!("Basic {}", BASE64.encode("ann:pw1").trim_end_matches('='));
        assert_eq!(
            credentials(&with_header(&unpadded)).unwrap(),
            Credentials::Basic {
                user: "ann".into(),
                password: "pw1".into()
            }
        );
        assert_eq!(
            credentials(&with_header("bearer abc")).unwrap(),
            Credentials::Bearer("abc".into())
        );
        assert_eq!(credentials(&MetadataMap::new()).unwrap(), Credentials::None);
        assert!(credentials(&with_header("Basic !!!")).is_err());
        assert!(credentials(&with_header("Digest x")).is_err());
    }

    #[test]
    fn tokens_belong_to_their_user() {
        let roles = Roles::default();
        roles.add_superuser("ann", Some("pw"));
        let auth = Auth::new(Arc::new(roles), false);
        assert!(auth.check_password("ann", "pw").is_ok());
        assert!(auth.check_password("ann", "nope").is_err());
        let t = auth.issue_token("ann").unwrap();
        assert_eq!(t.len(), 64);
        assert_eq!(auth.token_user(&t).as_deref(), Some("ann"));
        assert_eq!(auth.token_user("0000"), None);
        assert_ne!(auth.issue_token("ann").unwrap(), t);
    }

    #[test]
    fn loopback() {
        assert!(is_loopback(Some("127.0.0.1:5".parse().unwrap())));
        assert!(is_loopback(Some("[::1]:5".parse().unwrap())));
        assert!(is_loopback(Some("[::ffff:127.0.0.1]:5".parse().unwrap())));
        assert!(!is_loopback(Some("10.0.0.1:5".parse().unwrap())));
        assert!(!is_loopback(None));
    }
}
