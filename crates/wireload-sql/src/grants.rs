//! CREATE ROLE / USER, ALTER ROLE / USER, DROP ROLE / USER, GRANT and REVOKE (of table
//! privileges, of CREATE on the database, of role membership), parsed with sqlparser's
//! PostgreSQL grammar where it has one.

use datafusion::sql::sqlparser::ast::{
    self, Action, Expr, GrantObjects, Grantee, GranteeName, GranteesType, ObjectName, Privileges,
    Value,
};
use datafusion::sql::sqlparser::keywords::Keyword;
use datafusion::sql::sqlparser::parser::Parser;
use datafusion::sql::sqlparser::tokenizer::Token;

use crate::SqlError;
use crate::ddl::table_name;
use crate::parse::{expected, is_word};
use crate::roles::{Privilege, RoleOptions, RoleStatement, ScramVerifier};

/// A role statement at the parser's position, consumed; None (nothing consumed) for
/// anything else.
pub(crate) fn parse(p: &mut Parser<'_>) -> Result<Option<RoleStatement>, SqlError> {
    let first = p.peek_token().token;
    let second = p.peek_nth_token(1).token;
    let role_word = |t: &Token| is_word(t, "role") || is_word(t, "user");
    if is_word(&first, "create") && role_word(&second) {
        p.next_token();
        let user = is_word(&p.next_token().token, "user");
        let create = p.parse_create_role()?;
        return create_role(create, user).map(Some);
    }
    if is_word(&first, "alter") && role_word(&second) {
        p.next_token();
        p.next_token();
        return alter_role(p).map(Some);
    }
    if is_word(&first, "grant") || is_word(&first, "revoke") {
        let grant = is_word(&first, "grant");
        if !names_an_object(p) {
            p.next_token();
            return membership(p, grant).map(Some);
        }
        p.next_token();
        return if grant {
            let g = p.parse_grant()?;
            if g.with_grant_option {
                return Err(SqlError::NotSupported(
                    "GRANT ... WITH GRANT OPTION is not supported".into(),
                ));
            }
            on_objects(true, g.privileges, g.objects, &g.grantees).map(Some)
        } else {
            let r = p.parse_revoke()?;
            on_objects(false, r.privileges, r.objects, &r.grantees).map(Some)
        };
    }
    Ok(None)
}

/// `DROP ROLE` / `DROP USER`, from the AST.
pub(crate) fn drop_role(names: &[ObjectName], if_exists: bool) -> Result<RoleStatement, SqlError> {
    Ok(RoleStatement::Drop {
        names: names.iter().map(role_name).collect::<Result<_, _>>()?,
        if_exists,
    })
}

/// True when the GRANT or REVOKE at the parser's position has an ON clause (privileges on
/// objects) rather than naming roles.
fn names_an_object(p: &Parser<'_>) -> bool {
    (1..)
        .map(|i| p.peek_nth_token(i).token)
        .take_while(|t| !matches!(t, Token::EOF | Token::SemiColon))
        .any(|t| matches!(t, Token::Word(w) if w.keyword == Keyword::ON))
}

/// `GRANT role, ... TO member, ...` or `REVOKE role, ... FROM member, ...`, after the
/// first keyword.
fn membership(p: &mut Parser<'_>, grant: bool) -> Result<RoleStatement, SqlError> {
    let roles = p.parse_comma_separated(|p| p.parse_identifier())?;
    let (keyword, word) = if grant {
        (Keyword::TO, "TO")
    } else {
        (Keyword::FROM, "FROM")
    };
    if !p.parse_keyword(keyword) {
        return Err(SqlError::Syntax(expected(word, &p.peek_token())));
    }
    let members = p.parse_comma_separated(|p| p.parse_identifier())?;
    if p.parse_keywords(&[Keyword::WITH]) {
        return Err(SqlError::NotSupported(
            "GRANT role ... WITH ADMIN / INHERIT / SET options are not supported".into(),
        ));
    }
    Ok(RoleStatement::Membership {
        grant,
        roles: roles.iter().map(ident).collect(),
        members: members.iter().map(ident).collect(),
    })
}

/// GRANT or REVOKE of privileges on tables or of CREATE on the database.
fn on_objects(
    grant: bool,
    privileges: Privileges,
    objects: Option<GrantObjects>,
    grantees: &[Grantee],
) -> Result<RoleStatement, SqlError> {
    let grantees = grantees
        .iter()
        .map(|g| match (&g.grantee_type, &g.name) {
            (GranteesType::Public, _) => Ok(None),
            (_, Some(GranteeName::ObjectName(name))) => role_name(name).map(Some),
            _ => Err(SqlError::NotSupported(format!(
                "grantee {g} is not supported: name a role or PUBLIC"
            ))),
        })
        .collect::<Result<Vec<_>, _>>()?;
    let actions = match &privileges {
        Privileges::All { .. } => None,
        Privileges::Actions(actions) => Some(actions),
    };
    let objects = objects.ok_or_else(|| SqlError::NotSupported("GRANT needs ON ...".into()))?;
    if let GrantObjects::Databases(_) = &objects {
        let only_create =
            actions.is_none_or(|a| a.iter().all(|a| matches!(a, Action::Create { .. })));
        if !only_create {
            return Err(SqlError::NotSupported(
                "of the database's privileges only CREATE can be granted".into(),
            ));
        }
        let grantees = grantees
            .into_iter()
            .collect::<Option<Vec<_>>>()
            .ok_or_else(|| {
                SqlError::NotSupported(
                    "CREATE on the database is granted to roles, not PUBLIC".into(),
                )
            })?;
        return Ok(RoleStatement::CreateOnDatabase { grant, grantees });
    }
    let privileges = match actions {
        None => Privilege::ALL.to_vec(),
        Some(actions) => actions
            .iter()
            .map(|a| match a {
                Action::Select { columns: None } => Ok(Privilege::Select),
                Action::Insert { columns: None } => Ok(Privilege::Insert),
                Action::Update { columns: None } => Ok(Privilege::Update),
                Action::Delete => Ok(Privilege::Delete),
                Action::Truncate => Ok(Privilege::Truncate),
                other => Err(SqlError::NotSupported(format!(
                    "privilege {other} is not supported on tables (SELECT, INSERT, UPDATE, \
                     DELETE, TRUNCATE or ALL)"
                ))),
            })
            .collect::<Result<Vec<_>, _>>()?,
    };
    let relations = match objects {
        GrantObjects::Tables(names) => Some(
            names
                .iter()
                .map(table_name)
                .collect::<Result<Vec<_>, _>>()?,
        ),
        GrantObjects::AllTablesInSchema { schemas } => {
            for s in &schemas {
                let name = role_name(s)?;
                if name != wireload_query::DEFAULT_SCHEMA {
                    return Err(SqlError::NotSupported(format!(
                        "schema \"{name}\" does not exist; tables live in schema \"{}\"",
                        wireload_query::DEFAULT_SCHEMA
                    )));
                }
            }
            None
        }
        other => {
            return Err(SqlError::NotSupported(format!(
                "GRANT ON {other} is not supported: privileges are granted on tables and views"
            )));
        }
    };
    Ok(RoleStatement::Tables {
        grant,
        privileges,
        relations,
        grantees,
    })
}

/// `CREATE ROLE` / `CREATE USER`.
fn create_role(c: ast::CreateRole, user: bool) -> Result<RoleStatement, SqlError> {
    let [name] = c.names.as_slice() else {
        return Err(SqlError::NotSupported(
            "CREATE ROLE makes one role at a time".into(),
        ));
    };
    let unsupported = [
        (c.bypassrls.is_some(), "BYPASSRLS"),
        (c.replication.is_some(), "REPLICATION"),
        (c.valid_until.is_some(), "VALID UNTIL"),
        (c.inherit == Some(false), "NOINHERIT"),
        (
            !c.role.is_empty() || !c.user.is_empty(),
            "ROLE / USER (members)",
        ),
        (!c.admin.is_empty(), "ADMIN"),
        (c.authorization_owner.is_some(), "AUTHORIZATION"),
    ];
    if let Some((_, what)) = unsupported.iter().find(|(given, _)| *given) {
        return Err(SqlError::NotSupported(format!(
            "the role option {what} is not supported"
        )));
    }
    let options = RoleOptions {
        superuser: c.superuser,
        login: c.login,
        create_role: c.create_role,
        create_db: c.create_db,
        connection_limit: c
            .connection_limit
            .as_ref()
            .map(connection_limit)
            .transpose()?,
        password: c.password.as_ref().map(password).transpose()?,
    };
    Ok(RoleStatement::Create {
        name: role_name(name)?,
        if_not_exists: c.if_not_exists,
        options,
        member_of: c.in_role.iter().chain(&c.in_group).map(ident).collect(),
        user,
    })
}

/// `ALTER ROLE name [WITH] options`, after `ALTER ROLE`.
fn alter_role(p: &mut Parser<'_>) -> Result<RoleStatement, SqlError> {
    let name = ident(&p.parse_identifier()?);
    if p.peek_keyword(Keyword::RENAME)
        || p.peek_keyword(Keyword::SET)
        || p.peek_keyword(Keyword::RESET)
    {
        return Err(SqlError::NotSupported(format!(
            "ALTER ROLE ... {} is not supported: only its options (PASSWORD, LOGIN, \
             SUPERUSER, CREATEROLE, CREATEDB, CONNECTION LIMIT) change",
            p.peek_token().token
        )));
    }
    let _ = p.parse_keyword(Keyword::WITH);
    let mut out = RoleOptions::default();
    loop {
        let token = p.peek_token();
        let Token::Word(w) = &token.token else {
            break;
        };
        match w.keyword {
            Keyword::SUPERUSER => out.superuser = Some(true),
            Keyword::NOSUPERUSER => out.superuser = Some(false),
            Keyword::LOGIN => out.login = Some(true),
            Keyword::NOLOGIN => out.login = Some(false),
            Keyword::CREATEROLE => out.create_role = Some(true),
            Keyword::NOCREATEROLE => out.create_role = Some(false),
            Keyword::CREATEDB => out.create_db = Some(true),
            Keyword::NOCREATEDB => out.create_db = Some(false),
            Keyword::INHERIT => {}
            Keyword::CONNECTION => {
                p.next_token();
                if !p.parse_keyword(Keyword::LIMIT) {
                    return Err(SqlError::Syntax(expected("LIMIT", &p.peek_token())));
                }
                let limit = p.parse_expr()?;
                out.connection_limit = Some(connection_limit(&limit)?);
                continue;
            }
            Keyword::PASSWORD => {
                p.next_token();
                let given = if p.parse_keyword(Keyword::NULL) {
                    ast::Password::NullPassword
                } else {
                    ast::Password::Password(p.parse_expr()?)
                };
                out.password = Some(password(&given)?);
                continue;
            }
            _ => {
                return Err(SqlError::NotSupported(format!(
                    "the role option {} is not supported",
                    token.token
                )));
            }
        }
        p.next_token();
    }
    Ok(RoleStatement::Alter { name, options: out })
}

/// `CONNECTION LIMIT n` (-1: none).
fn connection_limit(e: &Expr) -> Result<Option<u32>, SqlError> {
    let text = e.to_string();
    match text.trim().parse::<i64>() {
        Ok(-1) => Ok(None),
        Ok(n) if n >= 0 => Ok(Some(u32::try_from(n).unwrap_or(u32::MAX))),
        _ => Err(SqlError::InvalidOption(format!(
            "CONNECTION LIMIT must be -1 or a count of connections, got {text}"
        ))),
    }
}

/// A password as a verifier: a SCRAM verifier given as such is kept, a password is
/// turned into one at once.
fn password(p: &ast::Password) -> Result<Option<ScramVerifier>, SqlError> {
    let ast::Password::Password(e) = p else {
        return Ok(None);
    };
    let text = match e {
        Expr::Value(v) => match &v.value {
            Value::SingleQuotedString(s) | Value::EscapedStringLiteral(s) => s.clone(),
            _ => return Err(SqlError::InvalidOption("PASSWORD takes a string".into())),
        },
        _ => return Err(SqlError::InvalidOption("PASSWORD takes a string".into())),
    };
    if text.starts_with("SCRAM-SHA-256$") {
        return ScramVerifier::parse(&text).map(Some).ok_or_else(|| {
            SqlError::InvalidOption(
                "the SCRAM-SHA-256 verifier given as PASSWORD is malformed".into(),
            )
        });
    }
    if text.len() == 35 && text.starts_with("md5") {
        return Err(SqlError::NotSupported(
            "MD5 password hashes are not supported: give the password, or a SCRAM-SHA-256 verifier"
                .into(),
        ));
    }
    if text.is_empty() {
        return Err(SqlError::InvalidOption("a password cannot be empty".into()));
    }
    Ok(Some(ScramVerifier::new(&text)))
}

/// A role's name: unquoted folds to lower case.
fn role_name(name: &ObjectName) -> Result<String, SqlError> {
    match name.0.as_slice() {
        [ast::ObjectNamePart::Identifier(i)] => Ok(ident(i)),
        _ => Err(SqlError::InvalidOption(format!("invalid role name {name}"))),
    }
}

fn ident(i: &ast::Ident) -> String {
    wireload_types::sql::ident_name(i)
}

#[cfg(test)]
mod tests {
    use crate::parse::{Statement, parse_script};
    use crate::roles::{Privilege, RoleStatement};

    fn role(sql: &str) -> RoleStatement {
        match parse_script(sql).unwrap().remove(0).statement {
            Statement::Role(r) => r,
            other => panic!("{sql}: {other:?}"),
        }
    }

    #[test]
    fn role_statements_parse_the_postgresql_way() {
        let RoleStatement::Create {
            name,
            options,
            user,
            member_of,
            ..
        } = role("CREATE USER Bob WITH PASSWORD 'pw' CONNECTION LIMIT 3 IN ROLE readers")
        else {
            panic!()
        };
        assert_eq!(name, "bob");
        assert!(user);
        assert_eq!(member_of, ["readers"]);
        assert_eq!(options.connection_limit, Some(Some(3)));
        assert!(options.password.unwrap().unwrap().verify("pw"));
        let RoleStatement::Create { options, user, .. } = role("CREATE ROLE r NOLOGIN SUPERUSER")
        else {
            panic!()
        };
        assert!(!user);
        assert_eq!(
            (options.login, options.superuser),
            (Some(false), Some(true))
        );
        let RoleStatement::Alter { name, options } =
            role("ALTER ROLE bob WITH NOSUPERUSER CONNECTION LIMIT -1 PASSWORD NULL")
        else {
            panic!()
        };
        assert_eq!(name, "bob");
        assert_eq!(options.connection_limit, Some(None));
        assert!(options.password.unwrap().is_none());
        assert!(matches!(
            role("DROP ROLE IF EXISTS a, b"),
            RoleStatement::Drop { names, if_exists: true } if names == ["a", "b"]
        ));
        assert!(matches!(
            role("GRANT pg_read_server_files, readers TO bob"),
            RoleStatement::Membership { grant: true, roles, members }
                if roles == ["pg_read_server_files", "readers"] && members == ["bob"]
        ));
        assert!(matches!(
            role("REVOKE readers FROM bob"),
            RoleStatement::Membership { grant: false, .. }
        ));
        assert!(matches!(
            role("GRANT SELECT, INSERT ON TABLE t, public.u TO bob, PUBLIC"),
            RoleStatement::Tables { grant: true, privileges, relations: Some(r), grantees }
                if privileges == [Privilege::Select, Privilege::Insert]
                    && r == ["t", "u"]
                    && grantees == [Some("bob".to_string()), None]
        ));
        assert!(matches!(
            role("REVOKE ALL ON ALL TABLES IN SCHEMA public FROM bob"),
            RoleStatement::Tables { grant: false, relations: None, privileges, .. }
                if privileges.len() == 5
        ));
        assert!(matches!(
            role("GRANT CREATE ON DATABASE wireload TO bob"),
            RoleStatement::CreateOnDatabase { grant: true, grantees } if grantees == ["bob"]
        ));
    }

    #[test]
    fn unsupported_role_forms_are_refused_clearly() {
        for (sql, says) in [
            ("CREATE ROLE r VALID UNTIL '2030-01-01'", "VALID UNTIL"),
            (
                "CREATE ROLE r PASSWORD 'md5aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa'",
                "MD5",
            ),
            ("GRANT SELECT ON t TO r WITH GRANT OPTION", "GRANT OPTION"),
            ("GRANT USAGE ON SCHEMA public TO r", "not supported"),
            ("ALTER ROLE r RENAME TO s", "not supported"),
            ("ALTER ROLE r VALID UNTIL 'x'", "not supported"),
            ("CREATE ROLE r PASSWORD 'SCRAM-SHA-256$bad'", "malformed"),
        ] {
            let e = parse_script(sql).unwrap_err().to_string();
            assert!(e.contains(says), "{sql}: {e}");
        }
    }
}
