//! Splitting SQL text into statements at `;` outside quotes and comments.

/// One statement of a script: its text (without the `;`) and the 1-based line it starts on.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Statement<'a> {
    /// The statement text, trimmed, without the terminating `;`.
    pub text: &'a str,
    /// The line of the statement's first character.
    pub line: usize,
}

/// Where the scanner is inside SQL text.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum State {
    Code,
    SingleQuoted,
    DoubleQuoted,
    LineComment,
    BlockComment(u32),
}

/// The result of scanning SQL text: the statements, and whether the text ends in a terminated one.
#[derive(Debug)]
struct Scan<'a> {
    statements: Vec<Statement<'a>>,
    /// Text after the last `;` holds code (an unterminated statement) or an open quote/comment.
    open_tail: bool,
}

fn scan(sql: &str) -> Scan<'_> {
    let bytes = sql.as_bytes();
    let mut statements = Vec::new();
    let mut state = State::Code;
    let mut line = 1usize;
    // start of the current statement's first code byte, and its line
    let mut start: Option<(usize, usize)> = None;
    let mut i = 0;
    while i < bytes.len() {
        let b = bytes[i];
        let next = bytes.get(i + 1).copied();
        if b == b'\n' {
            line += 1;
        }
        match state {
            State::Code => match b {
                b';' => {
                    if let Some((s, l)) = start.take() {
                        statements.push(Statement {
                            text: sql[s..i].trim(),
                            line: l,
                        });
                    }
                }
                b'-' if next == Some(b'-') => {
                    state = State::LineComment;
                    i += 1;
                }
                b'/' if next == Some(b'*') => {
                    state = State::BlockComment(1);
                    i += 1;
                }
                _ => {
                    if !b.is_ascii_whitespace() && start.is_none() {
                        start = Some((i, line));
                    }
                    if b == b'\'' {
                        state = State::SingleQuoted;
                    } else if b == b'"' {
                        state = State::DoubleQuoted;
                    }
                }
            },
            State::SingleQuoted | State::DoubleQuoted => {
                let quote = if state == State::SingleQuoted {
                    b'\''
                } else {
                    b'"'
                };
                if b == quote {
                    if next == Some(quote) {
                        i += 1; // doubled quote stays inside
                    } else {
                        state = State::Code;
                    }
                }
            }
            State::LineComment => {
                if b == b'\n' {
                    state = State::Code;
                }
            }
            State::BlockComment(depth) => {
                if b == b'*' && next == Some(b'/') {
                    state = if depth == 1 {
                        State::Code
                    } else {
                        State::BlockComment(depth - 1)
                    };
                    i += 1;
                } else if b == b'/' && next == Some(b'*') {
                    state = State::BlockComment(depth + 1);
                    i += 1;
                }
            }
        }
        i += 1;
    }
    let open_quote_or_block = matches!(
        state,
        State::SingleQuoted | State::DoubleQuoted | State::BlockComment(_)
    );
    let open_tail = start.is_some() || open_quote_or_block;
    if let Some((s, l)) = start {
        statements.push(Statement {
            text: sql[s..].trim(),
            line: l,
        });
    }
    Scan {
        statements,
        open_tail,
    }
}

/// Splits SQL text into statements at each `;` outside quotes and comments.
/// Statements that hold only whitespace and comments are dropped; a last statement
/// without a `;` is kept.
pub fn split(sql: &str) -> Vec<Statement<'_>> {
    scan(sql).statements
}

/// True when every statement in `sql` is terminated by a `;` (and no quote or comment
/// is left open), so an interactive shell can run it. Text without any statement is complete.
pub fn is_complete(sql: &str) -> bool {
    !scan(sql).open_tail
}

#[cfg(test)]
mod tests {
    use super::*;

    fn texts(sql: &str) -> Vec<&str> {
        split(sql).into_iter().map(|s| s.text).collect()
    }

    #[test]
    fn splits_at_semicolons() {
        assert_eq!(texts("select 1; select 2;"), ["select 1", "select 2"]);
        assert_eq!(texts("select 1;\nselect 2"), ["select 1", "select 2"]);
    }

    #[test]
    fn ignores_semicolons_in_quotes_and_comments() {
        assert_eq!(
            texts("select 'a;b', \"c;d\"; select 2"),
            ["select 'a;b', \"c;d\"", "select 2"]
        );
        assert_eq!(texts("select 'it''s;'; x"), ["select 'it''s;'", "x"]);
        assert_eq!(
            texts("select 1 -- no; split\n; x"),
            ["select 1 -- no; split", "x"]
        );
        assert_eq!(
            texts("select /* a; /* b; */ c; */ 1; x"),
            ["select /* a; /* b; */ c; */ 1", "x"]
        );
    }

    #[test]
    fn drops_empty_and_comment_only_statements() {
        assert_eq!(
            texts(";; -- just a comment\n ; /* c */"),
            Vec::<&str>::new()
        );
        assert_eq!(texts("-- header\nselect 1;\n-- trailer\n"), ["select 1"]);
    }

    #[test]
    fn reports_start_lines() {
        let s = split("-- c\n\nselect 1;\n  select\n 2;");
        assert_eq!(s[0].line, 3);
        assert_eq!(s[1].line, 4);
    }

    #[test]
    fn completeness() {
        assert!(is_complete(""));
        assert!(is_complete("select 1;"));
        assert!(is_complete("select 1; -- done"));
        assert!(!is_complete("select 1"));
        assert!(!is_complete("select 1; select"));
        assert!(!is_complete("select ';"));
        assert!(!is_complete("select 1; /* open"));
        assert!(is_complete("select 'a;';\n"));
    }
}
