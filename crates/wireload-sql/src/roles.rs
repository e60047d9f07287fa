//! Roles the PostgreSQL way: who may log in (with a SCRAM-SHA-256 verifier, never the
//! password), superusers, role membership (the built-in roles `pg_read_server_files`,
//! `pg_write_server_files`, `pg_read_all_data` and `pg_write_all_data` among them), the
//! owner of each table and view, the privileges granted on them, and CREATE on the
//! database. Shared by every session of a database; a session acts as one role
//! ([`Actor`]), or as the process's user, who may do anything.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::num::NonZeroU32;
use std::sync::RwLock;
use std::sync::atomic::{AtomicU64, Ordering};

use base64::Engine;
use base64::engine::general_purpose::STANDARD as BASE64;

use crate::SqlError;

/// Members may read server files (COPY FROM a file, files in FROM, IMPORT DATABASE).
pub const READ_SERVER_FILES: &str = "pg_read_server_files";
/// Members may write server files (COPY TO a file, EXPORT DATABASE).
pub const WRITE_SERVER_FILES: &str = "pg_write_server_files";
/// Members may read every table and view.
pub const READ_ALL_DATA: &str = "pg_read_all_data";
/// Members may insert, update and delete in every table.
pub const WRITE_ALL_DATA: &str = "pg_write_all_data";
/// The roles every database has.
const BUILT_IN: [&str; 4] = [
    READ_SERVER_FILES,
    WRITE_SERVER_FILES,
    READ_ALL_DATA,
    WRITE_ALL_DATA,
];
/// SCRAM's iteration count for the verifiers made here (PostgreSQL's default).
pub const SCRAM_ITERATIONS: u32 = 4096;

/// Whose rights a session has.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Actor {
    /// The operating-system user running the process (the shell, scripts, Python): every
    /// right.
    Local,
    /// A network client logged in as this role.
    Role(String),
    /// A loopback client let in without a password (`--trust-local`) under a name that is
    /// no role: a superuser's rights (server files still only through the file gate).
    Trusted(String),
}

/// A privilege on a table or view.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Privilege {
    /// Read its rows.
    Select,
    /// Add rows.
    Insert,
    /// Change rows.
    Update,
    /// Remove rows.
    Delete,
    /// Empty it.
    Truncate,
}

impl Privilege {
    /// Every privilege, in PostgreSQL's order.
    pub const ALL: [Privilege; 5] = [
        Privilege::Insert,
        Privilege::Select,
        Privilege::Update,
        Privilege::Delete,
        Privilege::Truncate,
    ];

    fn bit(self) -> u8 {
        match self {
            Privilege::Select => 1,
            Privilege::Insert => 2,
            Privilege::Update => 4,
            Privilege::Delete => 8,
            Privilege::Truncate => 16,
        }
    }

    /// The SQL keyword.
    pub fn keyword(self) -> &'static str {
        match self {
            Privilege::Select => "SELECT",
            Privilege::Insert => "INSERT",
            Privilege::Update => "UPDATE",
            Privilege::Delete => "DELETE",
            Privilege::Truncate => "TRUNCATE",
        }
    }

    /// Its letter in an access list (`aclitem`): r, a, w, d, D.
    fn letter(self) -> char {
        match self {
            Privilege::Select => 'r',
            Privilege::Insert => 'a',
            Privilege::Update => 'w',
            Privilege::Delete => 'd',
            Privilege::Truncate => 'D',
        }
    }

    /// The privilege a keyword names.
    pub fn of_keyword(word: &str) -> Option<Privilege> {
        Privilege::ALL
            .into_iter()
            .find(|p| p.keyword().eq_ignore_ascii_case(word))
    }
}

/// A role's SCRAM-SHA-256 verifier: what a password is checked against. It cannot be
/// turned back into the password, nor used to log in.
#[derive(Clone, PartialEq, Eq)]
pub struct ScramVerifier {
    /// The salt.
    pub salt: Vec<u8>,
    /// PBKDF2's iteration count.
    pub iterations: u32,
    /// `SHA-256(HMAC(SaltedPassword, "Client Key"))`.
    pub stored_key: Vec<u8>,
    /// `HMAC(SaltedPassword, "Server Key")`.
    pub server_key: Vec<u8>,
}

impl std::fmt::Debug for ScramVerifier {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ScramVerifier")
            .field("iterations", &self.iterations)
            .finish_non_exhaustive()
    }
}

impl ScramVerifier {
    /// The verifier of `password` with a new random salt.
    pub fn new(password: &str) -> ScramVerifier {
        let salt: [u8; 16] = rand::random();
        Self::with_salt(password, &salt, SCRAM_ITERATIONS)
    }

    /// The verifier of `password` with `salt` and `iterations`.
    fn with_salt(password: &str, salt: &[u8], iterations: u32) -> ScramVerifier {
        let salted = salted_password(password, salt, iterations);
        let client_key = hmac(&salted, b"Client Key");
        ScramVerifier {
            salt: salt.to_vec(),
            iterations,
            stored_key: ring::digest::digest(&ring::digest::SHA256, &client_key)
                .as_ref()
                .to_vec(),
            server_key: hmac(&salted, b"Server Key"),
        }
    }

    /// A verifier in PostgreSQL's text form
    /// (`SCRAM-SHA-256$<iterations>:<salt>$<StoredKey>:<ServerKey>`, base64), as psql's
    /// `\password` sends it.
    pub fn parse(text: &str) -> Option<ScramVerifier> {
        let rest = text.strip_prefix("SCRAM-SHA-256$")?;
        let (params, keys) = rest.split_once('$')?;
        let (iterations, salt) = params.split_once(':')?;
        let (stored, server) = keys.split_once(':')?;
        let verifier = ScramVerifier {
            salt: BASE64.decode(salt).ok()?,
            iterations: iterations.parse().ok().filter(|&i| i > 0)?,
            stored_key: BASE64.decode(stored).ok()?,
            server_key: BASE64.decode(server).ok()?,
        };
        (verifier.stored_key.len() == 32 && verifier.server_key.len() == 32).then_some(verifier)
    }

    /// PostgreSQL's text form (`pg_authid.rolpassword`).
    pub fn to_text(&self) -> String {
        format!(
            "SCRAM-SHA-256${}:{}${}:{}",
            self.iterations,
            BASE64.encode(&self.salt),
            BASE64.encode(&self.stored_key),
            BASE64.encode(&self.server_key)
        )
    }

    /// True when `password` is the one this verifier was made of (for logins that send
    /// a password, such as Arrow Flight's basic authentication).
    pub fn verify(&self, password: &str) -> bool {
        let other = Self::with_salt(password, &self.salt, self.iterations);
        constant_time_eq(&other.stored_key, &self.stored_key)
    }
}

/// Equality of two byte strings in time that depends on their lengths only.
fn constant_time_eq(a: &[u8], b: &[u8]) -> bool {
    let mut diff = a.len() ^ b.len();
    for (i, &x) in a.iter().enumerate() {
        diff |= usize::from(x ^ b.get(i).copied().unwrap_or(!x));
    }
    diff == 0
}

fn salted_password(password: &str, salt: &[u8], iterations: u32) -> Vec<u8> {
    let mut out = vec![0; 32];
    let iterations = NonZeroU32::new(iterations).unwrap_or(NonZeroU32::MIN);
    ring::pbkdf2::derive(
        ring::pbkdf2::PBKDF2_HMAC_SHA256,
        iterations,
        salt,
        password.as_bytes(),
        &mut out,
    );
    out
}

fn hmac(key: &[u8], data: &[u8]) -> Vec<u8> {
    let key = ring::hmac::Key::new(ring::hmac::HMAC_SHA256, key);
    ring::hmac::sign(&key, data).as_ref().to_vec()
}

/// One role.
#[derive(Debug, Clone)]
pub struct Role {
    /// Its name.
    pub name: String,
    /// Bypasses every check.
    pub superuser: bool,
    /// May log in.
    pub login: bool,
    /// May create, change and drop roles that are not superusers.
    pub create_role: bool,
    /// May create tables and views (`CREATEDB`, or CREATE on the database).
    pub create: bool,
    /// Connections at once (None: no limit).
    pub connection_limit: Option<u32>,
    /// What its password is checked against (None: it cannot log in with one).
    pub verifier: Option<ScramVerifier>,
    /// The roles it is a member of, directly.
    pub member_of: BTreeSet<String>,
    /// One of the roles every database has.
    pub built_in: bool,
}

impl Role {
    fn new(name: &str) -> Role {
        Role {
            name: name.to_string(),
            superuser: false,
            login: false,
            create_role: false,
            create: false,
            connection_limit: None,
            verifier: None,
            member_of: BTreeSet::new(),
            built_in: false,
        }
    }
}

/// The grantee of privileges given to everyone.
const PUBLIC: &str = "";

/// The roles, owners and grants of a database.
#[derive(Debug, Default)]
struct State {
    roles: BTreeMap<String, Role>,
    /// The owner of each table and view (those made locally have none: superusers only).
    owners: HashMap<String, String>,
    /// Privileges on each table and view, by grantee ([`PUBLIC`] for everyone).
    grants: HashMap<String, BTreeMap<String, u8>>,
    /// The relations each view reads (checked with its owner's rights when it is read).
    reads: HashMap<String, Vec<String>>,
}

/// The roles of a database and what they may do.
#[derive(Debug)]
pub struct Roles {
    state: RwLock<State>,
    /// Counts the changes of `state` and of the sessions' actors: a check passed at one
    /// count passes again while the count stays (see [`Roles::generation`]).
    generation: AtomicU64,
}

/// The write access to the roles' state; counts a change when dropped, after the change
/// and before the lock is released.
struct Changing<'a> {
    state: std::sync::RwLockWriteGuard<'a, State>,
    generation: &'a AtomicU64,
}

impl std::ops::Deref for Changing<'_> {
    type Target = State;
    fn deref(&self) -> &State {
        &self.state
    }
}

impl std::ops::DerefMut for Changing<'_> {
    fn deref_mut(&mut self) -> &mut State {
        &mut self.state
    }
}

impl Drop for Changing<'_> {
    fn drop(&mut self) {
        self.generation.fetch_add(1, Ordering::SeqCst);
    }
}

impl Default for Roles {
    fn default() -> Self {
        let mut state = State::default();
        for name in BUILT_IN {
            let mut role = Role::new(name);
            role.built_in = true;
            state.roles.insert(name.to_string(), role);
        }
        Roles {
            state: RwLock::new(state),
            generation: AtomicU64::new(1),
        }
    }
}

/// Why a role cannot log in.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum LoginRefused {
    /// No such role.
    #[error("role \"{0}\" does not exist")]
    NoSuchRole(String),
    /// The role is not allowed to log in.
    #[error("role \"{0}\" is not permitted to log in")]
    NoLogin(String),
}

impl Roles {
    fn read(&self) -> std::sync::RwLockReadGuard<'_, State> {
        self.state.read().unwrap_or_else(|e| e.into_inner())
    }

    fn write(&self) -> Changing<'_> {
        Changing {
            state: self.state.write().unwrap_or_else(|e| e.into_inner()),
            generation: &self.generation,
        }
    }

    /// The count of changes to roles, grants and ownership, and of sessions' actors. Read
    /// it before a check: a check that passed then passes while the count is the same.
    pub fn generation(&self) -> u64 {
        self.generation.load(Ordering::SeqCst)
    }

    /// Counts a change that is not the state's own (a session's actor changed).
    pub(crate) fn touch(&self) {
        self.generation.fetch_add(1, Ordering::SeqCst);
    }

    /// Adds (or replaces) a superuser that logs in with `password` (None: one that logs in
    /// only where no password is asked, `--trust-local`): the users named at start.
    pub fn add_superuser(&self, name: &str, password: Option<&str>) {
        let mut role = Role::new(name);
        role.superuser = true;
        role.login = true;
        role.create = true;
        role.create_role = true;
        role.verifier = password.map(ScramVerifier::new);
        self.write().roles.insert(name.to_string(), role);
    }

    /// The role called `name`.
    pub fn role(&self, name: &str) -> Option<Role> {
        self.read().roles.get(name).cloned()
    }

    /// Every role, by name.
    pub fn all(&self) -> Vec<Role> {
        self.read().roles.values().cloned().collect()
    }

    /// True when no role but the built-in ones exists.
    pub fn is_empty(&self) -> bool {
        self.read().roles.values().all(|r| r.built_in)
    }

    /// The role `name` when it may log in.
    pub fn login(&self, name: &str) -> Result<Role, LoginRefused> {
        match self.read().roles.get(name) {
            None => Err(LoginRefused::NoSuchRole(name.to_string())),
            Some(r) if !r.login => Err(LoginRefused::NoLogin(name.to_string())),
            Some(r) => Ok(r.clone()),
        }
    }

    /// True when `actor` has the privileges of role `of` (is it, a member of it through
    /// any chain of memberships, or a superuser).
    pub fn has_privileges_of(&self, actor: &Actor, of: &str) -> bool {
        match actor {
            Actor::Local | Actor::Trusted(_) => true,
            Actor::Role(name) => self.read().member(name, of),
        }
    }

    /// True when `actor` is the process's user or a superuser.
    pub fn is_superuser(&self, actor: &Actor) -> bool {
        match actor {
            Actor::Local | Actor::Trusted(_) => true,
            Actor::Role(name) => self.read().superuser(name),
        }
    }

    /// Checks that `actor` holds `privilege` on the table or view `relation` (and, for a
    /// view, that its owner may read what it reads).
    pub fn check(
        &self,
        actor: &Actor,
        relation: &str,
        privilege: Privilege,
    ) -> Result<(), SqlError> {
        let Actor::Role(name) = actor else {
            return Ok(());
        };
        let state = self.read();
        if !state.holds(name, relation, privilege) {
            return Err(SqlError::PermissionDenied {
                object: format!("table {relation}"),
                why: format!("role \"{name}\" lacks {} on it", privilege.keyword()),
            });
        }
        if privilege == Privilege::Select
            && let Some(reads) = state.reads.get(relation)
            && let Some(owner) = state.owners.get(relation)
        {
            for read in reads {
                if !state.holds(owner, read, Privilege::Select) {
                    return Err(SqlError::PermissionDenied {
                        object: format!("table {read}"),
                        why: format!(
                            "the owner of view \"{relation}\", role \"{owner}\", lacks SELECT on it"
                        ),
                    });
                }
            }
        }
        Ok(())
    }

    /// Checks that `actor` owns `relation` (or is a superuser): DROP, ALTER, indexes,
    /// GRANT.
    pub fn check_owner(&self, actor: &Actor, relation: &str) -> Result<(), SqlError> {
        let Actor::Role(name) = actor else {
            return Ok(());
        };
        let state = self.read();
        if state.owns(name, relation) {
            return Ok(());
        }
        Err(SqlError::PermissionDenied {
            object: format!("table {relation}"),
            why: format!("role \"{name}\" must be its owner"),
        })
    }

    /// Checks that `actor` may create tables and views.
    pub fn check_create(&self, actor: &Actor) -> Result<(), SqlError> {
        let Actor::Role(name) = actor else {
            return Ok(());
        };
        let state = self.read();
        if state.superuser(name) || state.roles.get(name).is_some_and(|r| r.create) {
            return Ok(());
        }
        Err(SqlError::PermissionDenied {
            object: format!("database {}", wireload_query::DEFAULT_CATALOG),
            why: format!(
                "role \"{name}\" lacks CREATE on it (GRANT CREATE ON DATABASE {} TO {name})",
                wireload_query::DEFAULT_CATALOG
            ),
        })
    }

    /// Records that `actor` made `relation` (a view reading `reads`): its owner.
    pub fn created(&self, actor: &Actor, relation: &str, reads: Vec<String>) {
        let mut state = self.write();
        state.grants.remove(relation);
        match actor {
            Actor::Role(name) => {
                state.owners.insert(relation.to_string(), name.clone());
            }
            Actor::Local | Actor::Trusted(_) => {
                state.owners.remove(relation);
            }
        }
        if reads.is_empty() {
            state.reads.remove(relation);
        } else {
            state.reads.insert(relation.to_string(), reads);
        }
    }

    /// Forgets the owner and grants of a dropped `relation`.
    pub fn dropped(&self, relation: &str) {
        let mut state = self.write();
        state.owners.remove(relation);
        state.grants.remove(relation);
        state.reads.remove(relation);
    }

    /// The owner of `relation` (None: made by the process's user).
    pub fn owner(&self, relation: &str) -> Option<String> {
        self.read().owners.get(relation).cloned()
    }

    /// `relation`'s access list as PostgreSQL's `relacl` writes it (`{grantee=arwdD/owner,...}`,
    /// `local_owner` naming the owner of what the process's user made), None when nothing
    /// was granted.
    pub fn access_list(&self, relation: &str, local_owner: &str) -> Option<String> {
        let state = self.read();
        let grants = state.grants.get(relation)?;
        let owner = state
            .owners
            .get(relation)
            .map_or(local_owner, String::as_str);
        let items: Vec<String> = grants
            .iter()
            .filter(|(_, bits)| **bits != 0)
            .map(|(grantee, bits)| {
                let letters: String = Privilege::ALL
                    .iter()
                    .filter(|p| bits & p.bit() != 0)
                    .map(|p| p.letter())
                    .collect();
                format!("{grantee}={letters}/{owner}")
            })
            .collect();
        Some(format!("{{{}}}", items.join(",")))
    }

    /// Grants (`grant` true) or revokes `privileges` on `relations` to or from `grantees`
    /// (`None` in it: PUBLIC), as `actor`, who must own each relation.
    pub fn grant(
        &self,
        actor: &Actor,
        grant: bool,
        privileges: &[Privilege],
        relations: &[String],
        grantees: &[Option<String>],
    ) -> Result<(), SqlError> {
        for relation in relations {
            self.check_owner(actor, relation)?;
        }
        let mut state = self.write();
        for grantee in grantees.iter().flatten() {
            if !state.roles.contains_key(grantee) {
                return Err(no_role(grantee));
            }
        }
        let bits = privileges.iter().fold(0, |b, p| b | p.bit());
        for relation in relations {
            let acl = state.grants.entry(relation.clone()).or_default();
            for grantee in grantees {
                let key = grantee.as_deref().unwrap_or(PUBLIC).to_string();
                let held = acl.entry(key).or_default();
                *held = if grant { *held | bits } else { *held & !bits };
            }
        }
        Ok(())
    }

    /// Runs a role statement as `actor`; returns its command tag. A grant on all tables
    /// comes with its tables named (the registry does not know the catalog).
    pub(crate) fn execute(
        &self,
        actor: &Actor,
        statement: RoleStatement,
    ) -> Result<String, SqlError> {
        match statement {
            RoleStatement::Create {
                name,
                if_not_exists,
                options,
                member_of,
                user,
            } => {
                self.check_manage(actor, &options)?;
                let mut state = self.write();
                if state.roles.contains_key(&name) {
                    if if_not_exists {
                        return Ok("CREATE ROLE".into());
                    }
                    return Err(SqlError::Duplicate(format!(
                        "role \"{name}\" already exists"
                    )));
                }
                if name.starts_with("pg_") {
                    return Err(SqlError::InvalidOption(format!(
                        "role name \"{name}\" is reserved: names starting with \"pg_\" are the system's"
                    )));
                }
                for of in &member_of {
                    if !state.roles.contains_key(of) {
                        return Err(no_role(of));
                    }
                }
                let mut role = Role::new(&name);
                role.login = user;
                options.apply(&mut role);
                role.member_of = member_of.into_iter().collect();
                state.roles.insert(name, role);
                Ok("CREATE ROLE".into())
            }
            RoleStatement::Alter { name, options } => {
                let is_self = matches!(actor, Actor::Role(n) if *n == name);
                // a role may change its own password, nothing else of itself
                if !(is_self && options.only_password()) {
                    self.check_manage(actor, &options)?;
                }
                let mut state = self.write();
                let superuser = state.roles.get(&name).is_some_and(|r| r.superuser);
                if superuser && !self.is_superuser_in(&state, actor) && !is_self {
                    return Err(denied_roles("only superusers may alter superusers"));
                }
                let role = state.roles.get_mut(&name).ok_or_else(|| no_role(&name))?;
                if role.built_in {
                    return Err(denied_roles("built-in roles cannot be altered"));
                }
                options.apply(role);
                Ok("ALTER ROLE".into())
            }
            RoleStatement::Drop { names, if_exists } => {
                self.check_manage(actor, &RoleOptions::default())?;
                let mut state = self.write();
                for name in &names {
                    match state.roles.get(name) {
                        None if if_exists => continue,
                        None => return Err(no_role(name)),
                        Some(r) if r.built_in => {
                            return Err(denied_roles("built-in roles cannot be dropped"));
                        }
                        Some(r) if r.superuser && !self.is_superuser_in(&state, actor) => {
                            return Err(denied_roles("only superusers may drop superusers"));
                        }
                        Some(_) => {}
                    }
                    if matches!(actor, Actor::Role(n) if n == name) {
                        return Err(denied_roles("the current user cannot be dropped"));
                    }
                    if let Some((relation, _)) = state.owners.iter().find(|(_, o)| *o == name) {
                        return Err(SqlError::DependentObjects(format!(
                            "role \"{name}\" cannot be dropped because some objects depend on it: \
                             it owns \"{relation}\""
                        )));
                    }
                }
                for name in &names {
                    state.roles.remove(name);
                    for role in state.roles.values_mut() {
                        role.member_of.remove(name);
                    }
                    for acl in state.grants.values_mut() {
                        acl.remove(name);
                    }
                }
                Ok("DROP ROLE".into())
            }
            RoleStatement::Membership {
                grant,
                roles,
                members,
            } => {
                let mut state = self.write();
                for role in roles.iter().chain(&members) {
                    if !state.roles.contains_key(role) {
                        return Err(no_role(role));
                    }
                }
                // superusers, and roles with CREATEROLE for roles that are not superusers
                let may = self.is_superuser_in(&state, actor)
                    || matches!(actor, Actor::Role(n) if state.roles.get(n).is_some_and(|r| r.create_role))
                        && roles.iter().all(|r| !state.superuser(r));
                if !may {
                    return Err(denied_roles(
                        "granting or revoking membership requires superuser or CREATEROLE",
                    ));
                }
                for member in &members {
                    for role in &roles {
                        if grant && state.member(role, member) {
                            return Err(SqlError::InvalidOption(format!(
                                "role \"{member}\" is a member of role \"{role}\": granting it would make a loop"
                            )));
                        }
                        let entry = state.roles.get_mut(member).expect("checked above");
                        if grant {
                            entry.member_of.insert(role.clone());
                        } else {
                            entry.member_of.remove(role);
                        }
                    }
                }
                Ok(if grant { "GRANT ROLE" } else { "REVOKE ROLE" }.into())
            }
            RoleStatement::Tables {
                grant,
                privileges,
                relations,
                grantees,
            } => {
                let relations = relations.unwrap_or_default();
                self.grant(actor, grant, &privileges, &relations, &grantees)?;
                Ok(if grant { "GRANT" } else { "REVOKE" }.into())
            }
            RoleStatement::CreateOnDatabase { grant, grantees } => {
                if !self.is_superuser(actor) {
                    return Err(denied_roles(
                        "only superusers may grant CREATE on the database",
                    ));
                }
                let mut state = self.write();
                for grantee in &grantees {
                    let role = state
                        .roles
                        .get_mut(grantee)
                        .ok_or_else(|| no_role(grantee))?;
                    role.create = grant;
                }
                Ok(if grant { "GRANT" } else { "REVOKE" }.into())
            }
        }
    }

    fn is_superuser_in(&self, state: &State, actor: &Actor) -> bool {
        match actor {
            Actor::Local | Actor::Trusted(_) => true,
            Actor::Role(n) => state.superuser(n),
        }
    }

    /// Checks that `actor` may create, change or drop roles with `options`.
    fn check_manage(&self, actor: &Actor, options: &RoleOptions) -> Result<(), SqlError> {
        let state = self.read();
        if self.is_superuser_in(&state, actor) {
            return Ok(());
        }
        let Actor::Role(name) = actor else {
            return Ok(());
        };
        if !state.roles.get(name).is_some_and(|r| r.create_role) {
            return Err(denied_roles(
                "creating, altering and dropping roles requires superuser or CREATEROLE",
            ));
        }
        if options.superuser.is_some() {
            return Err(denied_roles(
                "only superusers may make or unmake superusers",
            ));
        }
        Ok(())
    }
}

impl State {
    fn superuser(&self, name: &str) -> bool {
        self.roles.get(name).is_some_and(|r| r.superuser)
    }

    /// True when `name` is `of`, a member of it through any chain, or a superuser.
    fn member(&self, name: &str, of: &str) -> bool {
        let Some(role) = self.roles.get(name) else {
            return name == of;
        };
        if name == of || role.superuser {
            return true;
        }
        if role.member_of.is_empty() {
            return false;
        }
        let mut seen = BTreeSet::new();
        let mut todo = vec![name];
        while let Some(r) = todo.pop() {
            if r == of {
                return true;
            }
            if !seen.insert(r) {
                continue;
            }
            if let Some(role) = self.roles.get(r) {
                todo.extend(role.member_of.iter().map(String::as_str));
            }
        }
        false
    }

    fn owns(&self, name: &str, relation: &str) -> bool {
        self.superuser(name)
            || self
                .owners
                .get(relation)
                .is_some_and(|owner| self.member(name, owner))
    }

    /// True when `name` holds `privilege` on `relation`: owner, superuser, a grant to it,
    /// to a role it is a member of, or to PUBLIC, or the built-in `pg_*_all_data` roles.
    fn holds(&self, name: &str, relation: &str, privilege: Privilege) -> bool {
        if self.owns(name, relation) {
            return true;
        }
        let all_data = match privilege {
            Privilege::Select => Some(READ_ALL_DATA),
            Privilege::Insert | Privilege::Update | Privilege::Delete => Some(WRITE_ALL_DATA),
            Privilege::Truncate => None,
        };
        if all_data.is_some_and(|of| self.member(name, of)) {
            return true;
        }
        let Some(acl) = self.grants.get(relation) else {
            return false;
        };
        acl.iter().any(|(grantee, bits)| {
            bits & privilege.bit() != 0 && (grantee == PUBLIC || self.member(name, grantee))
        })
    }
}

fn no_role(name: &str) -> SqlError {
    SqlError::UndefinedObject(format!("role \"{name}\" does not exist"))
}

fn denied_roles(why: &str) -> SqlError {
    SqlError::PermissionDenied {
        object: "roles".into(),
        why: why.to_string(),
    }
}

/// The options of CREATE ROLE and ALTER ROLE (None: not given).
#[derive(Debug, Clone, Default)]
pub struct RoleOptions {
    /// `SUPERUSER` / `NOSUPERUSER`
    pub superuser: Option<bool>,
    /// `LOGIN` / `NOLOGIN`
    pub login: Option<bool>,
    /// `CREATEROLE` / `NOCREATEROLE`
    pub create_role: Option<bool>,
    /// `CREATEDB` / `NOCREATEDB`
    pub create_db: Option<bool>,
    /// `CONNECTION LIMIT n` (Some(None): -1, no limit)
    pub connection_limit: Option<Option<u32>>,
    /// `PASSWORD '...'` (Some(None): `PASSWORD NULL`)
    pub password: Option<Option<ScramVerifier>>,
}

impl RoleOptions {
    fn apply(self, role: &mut Role) {
        if let Some(v) = self.superuser {
            role.superuser = v;
        }
        if let Some(v) = self.login {
            role.login = v;
        }
        if let Some(v) = self.create_role {
            role.create_role = v;
        }
        if let Some(v) = self.create_db {
            role.create = v;
        }
        if let Some(v) = self.connection_limit {
            role.connection_limit = v;
        }
        if let Some(v) = self.password {
            role.verifier = v;
        }
    }

    fn only_password(&self) -> bool {
        self.password.is_some()
            && self.superuser.is_none()
            && self.login.is_none()
            && self.create_role.is_none()
            && self.create_db.is_none()
            && self.connection_limit.is_none()
    }
}

/// A statement about roles.
#[derive(Debug, Clone)]
pub enum RoleStatement {
    /// `CREATE ROLE` / `CREATE USER` (a user may log in unless told NOLOGIN)
    Create {
        /// the name
        name: String,
        /// `IF NOT EXISTS`
        if_not_exists: bool,
        /// its options
        options: RoleOptions,
        /// `IN ROLE r, ...`
        member_of: Vec<String>,
        /// made with CREATE USER
        user: bool,
    },
    /// `ALTER ROLE name [WITH] options`
    Alter {
        /// the name
        name: String,
        /// what changes
        options: RoleOptions,
    },
    /// `DROP ROLE [IF EXISTS] names`
    Drop {
        /// the names
        names: Vec<String>,
        /// `IF EXISTS`
        if_exists: bool,
    },
    /// `GRANT role, ... TO member, ...` / `REVOKE role, ... FROM member, ...`
    Membership {
        /// GRANT or REVOKE
        grant: bool,
        /// the roles granted
        roles: Vec<String>,
        /// the roles that become (or stop being) members
        members: Vec<String>,
    },
    /// `GRANT privileges ON [TABLE] t, ... | ALL TABLES IN SCHEMA public TO role | PUBLIC, ...`
    /// (or REVOKE ... FROM)
    Tables {
        /// GRANT or REVOKE
        grant: bool,
        /// the privileges
        privileges: Vec<Privilege>,
        /// the tables and views (None: all of them)
        relations: Option<Vec<String>>,
        /// the roles (None: PUBLIC)
        grantees: Vec<Option<String>>,
    },
    /// `GRANT CREATE ON DATABASE d TO role, ...` (or REVOKE)
    CreateOnDatabase {
        /// GRANT or REVOKE
        grant: bool,
        /// the roles
        grantees: Vec<String>,
    },
}

#[cfg(test)]
mod tests {
    use super::*;

    fn role(n: &str) -> Actor {
        Actor::Role(n.into())
    }

    fn run(roles: &Roles, actor: &Actor, statement: RoleStatement) -> Result<String, SqlError> {
        roles.execute(actor, statement)
    }

    fn create(name: &str, options: RoleOptions) -> RoleStatement {
        RoleStatement::Create {
            name: name.into(),
            if_not_exists: false,
            options,
            member_of: vec![],
            user: true,
        }
    }

    #[test]
    fn verifiers_check_passwords_and_round_trip_as_text() {
        let v = ScramVerifier::new("s3cret");
        assert!(v.verify("s3cret"));
        assert!(!v.verify("s3cre"));
        assert!(!format!("{v:?}").contains("s3cret"));
        let text = v.to_text();
        assert!(text.starts_with("SCRAM-SHA-256$4096:"), "{text}");
        assert_eq!(ScramVerifier::parse(&text), Some(v));
        // RFC 7677's exchange: user "user", password "pencil"; the server's signature of
        // the exchange is the RFC's `v=`
        let rfc = ScramVerifier::with_salt(
            "pencil",
            &BASE64.decode("W22ZaJ0SNY7soEsUEjb6gQ==").unwrap(),
            4096,
        );
        let nonce = "rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0";
        let exchange = format!(
            "n=user,r=rOprNGfwEbeRWgbNEkqO,r={nonce},s=W22ZaJ0SNY7soEsUEjb6gQ==,i=4096,c=biws,r={nonce}"
        );
        assert_eq!(
            BASE64.encode(hmac(&rfc.server_key, exchange.as_bytes())),
            "6rriTRBi23WpRR/wtup+mMhUZUn/dB5nLTJRsjl95G4="
        );
        for bad in [
            "",
            "md5abc",
            "SCRAM-SHA-256$x:AA==$AA==:AA==",
            "SCRAM-SHA-256$4096:AA==",
        ] {
            assert_eq!(ScramVerifier::parse(bad), None, "{bad}");
        }
    }

    #[test]
    fn privileges_come_from_ownership_grants_membership_and_public() {
        let roles = Roles::default();
        roles.add_superuser("admin", Some("pw"));
        let admin = role("admin");
        for n in ["ann", "bob", "readers"] {
            run(&roles, &admin, create(n, RoleOptions::default())).unwrap();
        }
        roles.created(&role("ann"), "t", vec![]);
        let (ann, bob) = (role("ann"), role("bob"));
        assert!(roles.check(&ann, "t", Privilege::Delete).is_ok());
        let e = roles.check(&bob, "t", Privilege::Select).unwrap_err();
        assert_eq!(e.sqlstate().0, "42501");
        assert!(e.to_string().contains("lacks SELECT"), "{e}");
        // only the owner grants
        assert!(
            roles
                .grant(
                    &bob,
                    true,
                    &[Privilege::Select],
                    &["t".into()],
                    &[Some("bob".into())]
                )
                .is_err()
        );
        roles
            .grant(
                &ann,
                true,
                &[Privilege::Select],
                &["t".into()],
                &[Some("readers".into())],
            )
            .unwrap();
        assert!(roles.check(&bob, "t", Privilege::Select).is_err());
        run(
            &roles,
            &admin,
            RoleStatement::Membership {
                grant: true,
                roles: vec!["readers".into()],
                members: vec!["bob".into()],
            },
        )
        .unwrap();
        assert!(roles.check(&bob, "t", Privilege::Select).is_ok());
        assert!(roles.check(&bob, "t", Privilege::Insert).is_err());
        roles
            .grant(&ann, true, &[Privilege::Insert], &["t".into()], &[None])
            .unwrap();
        assert!(roles.check(&bob, "t", Privilege::Insert).is_ok());
        assert_eq!(
            roles.access_list("t", "wireload").unwrap(),
            "{=a/ann,readers=r/ann}"
        );
        roles
            .grant(
                &ann,
                false,
                &[Privilege::Select],
                &["t".into()],
                &[Some("readers".into())],
            )
            .unwrap();
        assert!(roles.check(&bob, "t", Privilege::Select).is_err());
        // the built-in roles
        assert!(!roles.has_privileges_of(&bob, READ_SERVER_FILES));
        run(
            &roles,
            &admin,
            RoleStatement::Membership {
                grant: true,
                roles: vec![READ_SERVER_FILES.into(), READ_ALL_DATA.into()],
                members: vec!["readers".into()],
            },
        )
        .unwrap();
        assert!(roles.has_privileges_of(&bob, READ_SERVER_FILES));
        assert!(!roles.has_privileges_of(&bob, WRITE_SERVER_FILES));
        assert!(roles.check(&bob, "t", Privilege::Select).is_ok());
        assert!(roles.has_privileges_of(&admin, WRITE_SERVER_FILES));
    }

    #[test]
    fn views_read_with_their_owners_rights() {
        let roles = Roles::default();
        roles.add_superuser("admin", None);
        let admin = role("admin");
        for n in ["ann", "bob"] {
            run(&roles, &admin, create(n, RoleOptions::default())).unwrap();
        }
        roles.created(&admin, "secret", vec![]);
        roles
            .grant(
                &admin,
                true,
                &[Privilege::Select],
                &["secret".into()],
                &[Some("ann".into())],
            )
            .unwrap();
        roles.created(&role("ann"), "v", vec!["secret".into()]);
        roles
            .grant(
                &role("ann"),
                true,
                &[Privilege::Select],
                &["v".into()],
                &[Some("bob".into())],
            )
            .unwrap();
        assert!(roles.check(&role("bob"), "v", Privilege::Select).is_ok());
        assert!(
            roles
                .check(&role("bob"), "secret", Privilege::Select)
                .is_err()
        );
        roles
            .grant(
                &admin,
                false,
                &[Privilege::Select],
                &["secret".into()],
                &[Some("ann".into())],
            )
            .unwrap();
        let e = roles
            .check(&role("bob"), "v", Privilege::Select)
            .unwrap_err();
        assert!(e.to_string().contains("owner of view"), "{e}");
    }

    #[test]
    fn only_superusers_and_createrole_manage_roles() {
        let roles = Roles::default();
        roles.add_superuser("admin", None);
        let admin = role("admin");
        run(&roles, &admin, create("ann", RoleOptions::default())).unwrap();
        let ann = role("ann");
        assert!(run(&roles, &ann, create("eve", RoleOptions::default())).is_err());
        // ann changes her own password, and nothing else of herself
        let password = RoleOptions {
            password: Some(Some(ScramVerifier::new("new"))),
            ..Default::default()
        };
        run(
            &roles,
            &ann,
            RoleStatement::Alter {
                name: "ann".into(),
                options: password,
            },
        )
        .unwrap();
        assert!(roles.login("ann").unwrap().verifier.unwrap().verify("new"));
        let superuser = RoleOptions {
            superuser: Some(true),
            ..Default::default()
        };
        assert!(
            run(
                &roles,
                &ann,
                RoleStatement::Alter {
                    name: "ann".into(),
                    options: superuser
                }
            )
            .is_err()
        );
        let membership = |grant| RoleStatement::Membership {
            grant,
            roles: vec!["admin".into()],
            members: vec!["ann".into()],
        };
        assert!(run(&roles, &ann, membership(true)).is_err());
        assert!(!roles.is_superuser(&ann));
        assert!(run(&roles, &admin, create("pg_x", RoleOptions::default())).is_err());
        assert!(
            run(
                &roles,
                &admin,
                RoleStatement::Drop {
                    names: vec![READ_SERVER_FILES.into()],
                    if_exists: false
                }
            )
            .is_err()
        );
        roles.created(&ann, "t", vec![]);
        let drop = || RoleStatement::Drop {
            names: vec!["ann".into()],
            if_exists: false,
        };
        let e = run(&roles, &admin, drop()).unwrap_err();
        assert!(e.to_string().contains("owns \"t\""), "{e}");
        roles.dropped("t");
        run(&roles, &admin, drop()).unwrap();
        assert_eq!(
            roles.login("ann").unwrap_err(),
            LoginRefused::NoSuchRole("ann".into())
        );
    }
}
