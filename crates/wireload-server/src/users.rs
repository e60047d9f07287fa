//! The users named at start: names and passwords from the config file or the environment
//! (`WIRELOAD_USER`, `WIRELOAD_PASSWORD`). Both protocols make them superuser roles
//! (`wireload_sql::Roles`), which keep only SCRAM verifiers of the passwords.

use std::collections::HashMap;

/// The environment variable naming a user (with [`PASSWORD_ENV`]).
pub const USER_ENV: &str = "WIRELOAD_USER";
/// The environment variable holding that user's password.
pub const PASSWORD_ENV: &str = "WIRELOAD_PASSWORD";

/// Users and their passwords.
#[derive(Clone, Default)]
pub struct Users {
    passwords: HashMap<String, String>,
}

impl std::fmt::Debug for Users {
    // never the passwords
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let mut names: Vec<&String> = self.passwords.keys().collect();
        names.sort();
        f.debug_struct("Users").field("names", &names).finish()
    }
}

impl Users {
    /// No users.
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds (or replaces) `name` with `password`.
    pub fn add(&mut self, name: impl Into<String>, password: impl Into<String>) {
        self.passwords.insert(name.into(), password.into());
    }

    /// The user of `WIRELOAD_USER` and `WIRELOAD_PASSWORD`, when both are set (a user
    /// without a password is an error: it could never log in).
    pub fn from_env() -> Result<Option<(String, String)>, String> {
        let user = std::env::var(USER_ENV).ok().filter(|u| !u.is_empty());
        let password = std::env::var(PASSWORD_ENV).ok();
        match (user, password) {
            (Some(u), Some(p)) if !p.is_empty() => Ok(Some((u, p))),
            (Some(u), _) => Err(format!(
                "{USER_ENV}={u} is set but {PASSWORD_ENV} is not (or is empty)"
            )),
            (None, Some(_)) => Err(format!("{PASSWORD_ENV} is set but {USER_ENV} is not")),
            (None, None) => Ok(None),
        }
    }

    /// The password of `name`.
    pub fn password(&self, name: &str) -> Option<&str> {
        self.passwords.get(name).map(String::as_str)
    }

    /// The user names, sorted.
    pub fn names(&self) -> Vec<&str> {
        let mut names: Vec<&str> = self.passwords.keys().map(String::as_str).collect();
        names.sort_unstable();
        names
    }

    /// Makes each user a superuser role of `roles` that logs in with its password (kept
    /// there as a SCRAM verifier).
    pub fn make_superusers(&self, roles: &wireload_sql::Roles) {
        for name in self.names() {
            roles.add_superuser(name, self.password(name));
        }
    }

    /// True when there is no user.
    pub fn is_empty(&self) -> bool {
        self.passwords.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn users_never_show_their_passwords() {
        let mut users = Users::new();
        users.add("alice", "s3cret");
        assert_eq!(users.password("alice"), Some("s3cret"));
        assert_eq!(users.names(), ["alice"]);
        assert!(!format!("{users:?}").contains("s3cret"));
    }
}
