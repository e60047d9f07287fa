//! wireload's own settings (`statement_timeout`): `SET`, `SHOW` and `RESET` of them, parsed
//! from the AST; every other setting is DataFusion's.

use std::time::Duration;

use datafusion::sql::sqlparser::ast::{self, Expr, ObjectName, UnaryOperator, Value};

use crate::error::SqlError;

/// A setting of wireload's own.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Setting {
    /// `statement_timeout`: a statement running longer is cancelled (nothing of it remains).
    StatementTimeout,
}

impl Setting {
    /// The setting called `name` (case-insensitive), if it is wireload's.
    fn named(name: &str) -> Option<Setting> {
        name.eq_ignore_ascii_case("statement_timeout")
            .then_some(Setting::StatementTimeout)
    }

    /// The setting's name.
    pub fn name(&self) -> &'static str {
        match self {
            Setting::StatementTimeout => "statement_timeout",
        }
    }
}

/// A statement about one of wireload's settings.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SettingStatement {
    /// `SET name {= | TO} value`; `None` is the default (`0`, `DEFAULT`).
    Set(Setting, Option<Duration>),
    /// `SHOW name`
    Show(Setting),
    /// `RESET name`
    Reset(Setting),
}

/// The values of wireload's settings.
#[derive(Debug, Clone, Default)]
pub struct Settings {
    /// `statement_timeout`; `None`: no limit.
    pub statement_timeout: Option<Duration>,
}

impl Settings {
    /// The value of `setting` as `SHOW` prints it (PostgreSQL's form: `0`, `250ms`, `5s`).
    pub fn show(&self, setting: Setting) -> String {
        match setting {
            Setting::StatementTimeout => match self.statement_timeout {
                None => "0".into(),
                Some(d) if d.as_millis() % 1000 == 0 => format!("{}s", d.as_secs()),
                Some(d) => format!("{}ms", d.as_millis()),
            },
        }
    }
}

/// The setting statement `statement` is, when it sets, shows or resets a wireload setting.
pub(crate) fn of_ast(statement: &ast::Statement) -> Result<Option<SettingStatement>, SqlError> {
    match statement {
        ast::Statement::Set(ast::Set::SingleAssignment {
            variable, values, ..
        }) => {
            let Some(setting) = single(variable).and_then(Setting::named) else {
                return Ok(None);
            };
            let [value] = values.as_slice() else {
                return Err(invalid(setting, "takes one value"));
            };
            Ok(Some(SettingStatement::Set(
                setting,
                duration(setting, value)?,
            )))
        }
        ast::Statement::ShowVariable { variable } => match variable.as_slice() {
            [name] => Ok(Setting::named(&name.value).map(SettingStatement::Show)),
            _ => Ok(None),
        },
        _ => Ok(None),
    }
}

/// The setting `RESET name` resets, when it is wireload's.
pub(crate) fn of_reset(name: &ObjectName) -> Option<SettingStatement> {
    single(name)
        .and_then(Setting::named)
        .map(SettingStatement::Reset)
}

/// The one-part name `name`.
fn single(name: &ObjectName) -> Option<&str> {
    match name.0.as_slice() {
        [part] => part.as_ident().map(|i| i.value.as_str()),
        _ => None,
    }
}

fn invalid(setting: Setting, why: &str) -> SqlError {
    SqlError::InvalidOption(format!(
        "invalid value for parameter \"{}\": {why}",
        setting.name()
    ))
}

/// A time span as PostgreSQL writes one: a number of milliseconds, or a string with a unit
/// (`'250ms'`, `'5s'`, `'2 min'`, `'1h'`, `'1d'`); 0 or `DEFAULT` is no limit (`None`).
fn duration(setting: Setting, value: &Expr) -> Result<Option<Duration>, SqlError> {
    let text = match value {
        Expr::Value(v) => match &v.value {
            Value::Number(n, _) => n.clone(),
            Value::SingleQuotedString(s) => s.clone(),
            _ => return Err(invalid(setting, &format!("{value} is not a time span"))),
        },
        Expr::Identifier(i) if i.value.eq_ignore_ascii_case("default") => return Ok(None),
        Expr::UnaryOp {
            op: UnaryOperator::Minus,
            ..
        } => return Err(invalid(setting, "a time span cannot be negative")),
        _ => return Err(invalid(setting, &format!("{value} is not a time span"))),
    };
    time_span(&text).map_err(|why| invalid(setting, &why))
}

/// A `statement_timeout` value as text (`250`, `250ms`, `5s`, `1.5min`, `2h`, `1d`; no
/// unit: milliseconds): the span, None for 0 (no limit), or why it is not one.
pub fn time_span(text: &str) -> Result<Option<Duration>, String> {
    let text = text.trim();
    let split = text
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(text.len());
    let (number, unit) = (&text[..split], text[split..].trim());
    let number: f64 = number
        .parse()
        .map_err(|_| format!("\"{text}\" is not a time span"))?;
    let ms_per = match unit {
        "" | "ms" => 1.0,
        "s" => 1e3,
        "min" => 60e3,
        "h" => 3600e3,
        "d" => 86400e3,
        _ => return Err(format!("unit \"{unit}\" is not one of ms, s, min, h, d")),
    };
    let ms = (number * ms_per).round();
    if !(0.0..=i32::MAX as f64).contains(&ms) {
        return Err(format!("{text} is out of range (0 to {} ms)", i32::MAX));
    }
    Ok((ms > 0.0).then(|| Duration::from_millis(ms as u64)))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn set(sql: &str) -> Result<Option<SettingStatement>, SqlError> {
        let dialect = datafusion::sql::sqlparser::dialect::PostgreSqlDialect {};
        let statement = datafusion::sql::sqlparser::parser::Parser::parse_sql(&dialect, sql)
            .unwrap()
            .remove(0);
        of_ast(&statement)
    }

    #[test]
    fn time_spans() {
        let t = Setting::StatementTimeout;
        let ms = |n| Some(SettingStatement::Set(t, Some(Duration::from_millis(n))));
        assert_eq!(set("SET statement_timeout = 250").unwrap(), ms(250));
        assert_eq!(set("SET statement_timeout TO '5s'").unwrap(), ms(5000));
        assert_eq!(set("set STATEMENT_TIMEOUT = '2 min'").unwrap(), ms(120_000));
        assert_eq!(set("SET statement_timeout = '1.5s'").unwrap(), ms(1500));
        assert_eq!(
            set("SET statement_timeout = 0").unwrap(),
            Some(SettingStatement::Set(t, None))
        );
        assert_eq!(
            set("SET statement_timeout = DEFAULT").unwrap(),
            Some(SettingStatement::Set(t, None))
        );
        assert_eq!(
            set("SHOW statement_timeout").unwrap(),
            Some(SettingStatement::Show(t))
        );
        for bad in [
            "SET statement_timeout = '5 parsecs'",
            "SET statement_timeout = -1",
            "SET statement_timeout = 'soon'",
            "SET statement_timeout = 99999999999",
        ] {
            let e = set(bad).unwrap_err();
            assert!(e.to_string().contains("statement_timeout"), "{bad}: {e}");
        }
        assert_eq!(
            set("SET datafusion.execution.batch_size = 3").unwrap(),
            None
        );
        assert_eq!(set("SHOW datafusion.execution.batch_size").unwrap(), None);
    }

    #[test]
    fn shown_as_postgres_does() {
        let mut s = Settings::default();
        assert_eq!(s.show(Setting::StatementTimeout), "0");
        s.statement_timeout = Some(Duration::from_millis(250));
        assert_eq!(s.show(Setting::StatementTimeout), "250ms");
        s.statement_timeout = Some(Duration::from_secs(5));
        assert_eq!(s.show(Setting::StatementTimeout), "5s");
    }
}
