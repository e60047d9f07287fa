//! Bind parameters (text or binary, as the client sent them) as the values a prepared
//! statement takes. Every length and encoding is checked: the bytes come from the network.

use arrow::datatypes::DataType;
use bytes::Bytes;
use datafusion::common::ScalarValue;
use pgwire::api::Type;
use pgwire::error::PgWireError;

use crate::errors::user_error;
use crate::types::pg_type;

/// SQLSTATE of a malformed binary value.
const INVALID_BINARY: &str = "22P03";
/// SQLSTATE of text that is not UTF-8.
const BAD_ENCODING: &str = "22021";

/// The value of one parameter: `value` (None: NULL) in `binary` or text format, of the
/// type the client declared (`declared`, may be unknown) for a statement that wants
/// `wanted` (may be unknown).
pub fn decode(
    value: Option<&Bytes>,
    binary: bool,
    declared: Option<&Type>,
    wanted: Option<&DataType>,
) -> Result<ScalarValue, PgWireError> {
    let Some(bytes) = value else {
        return Ok(match wanted {
            Some(ty) => ScalarValue::try_from(ty).unwrap_or(ScalarValue::Null),
            None => ScalarValue::Null,
        });
    };
    // the type that tells how the bytes read: the client's, else the statement's
    let ty = match declared {
        Some(t) if *t != Type::UNKNOWN => t.clone(),
        _ => wanted.map(pg_type).unwrap_or(Type::TEXT),
    };
    if !binary {
        let text = std::str::from_utf8(bytes)
            .map_err(|_| user_error(BAD_ENCODING, "a text parameter is not valid UTF-8"))?;
        return Ok(text_value(text, &ty, wanted));
    }
    binary_value(bytes, &ty)
}

/// A text parameter: as a string that the statement casts to its type, except where the
/// statement does not say and the client does (then the client's type is parsed here).
fn text_value(text: &str, ty: &Type, wanted: Option<&DataType>) -> ScalarValue {
    let s = ScalarValue::Utf8(Some(text.to_string()));
    if wanted.is_some() {
        return s;
    }
    let target = match *ty {
        Type::INT2 => DataType::Int16,
        Type::INT4 => DataType::Int32,
        Type::INT8 => DataType::Int64,
        Type::FLOAT4 => DataType::Float32,
        Type::FLOAT8 => DataType::Float64,
        Type::BOOL => DataType::Boolean,
        Type::DATE => DataType::Date32,
        _ => return s,
    };
    s.cast_to(&target).unwrap_or(s)
}

/// Exactly `N` bytes, or the error naming the type.
fn fixed<const N: usize>(bytes: &[u8], name: &str) -> Result<[u8; N], PgWireError> {
    bytes.try_into().map_err(|_| {
        user_error(
            INVALID_BINARY,
            format!(
                "a binary {name} parameter has {} bytes, expected {N}",
                bytes.len()
            ),
        )
    })
}

fn binary_value(bytes: &[u8], ty: &Type) -> Result<ScalarValue, PgWireError> {
    Ok(match *ty {
        Type::BOOL => ScalarValue::Boolean(Some(fixed::<1>(bytes, "boolean")?[0] != 0)),
        Type::INT2 => ScalarValue::Int16(Some(i16::from_be_bytes(fixed(bytes, "smallint")?))),
        Type::INT4 => ScalarValue::Int32(Some(i32::from_be_bytes(fixed(bytes, "integer")?))),
        Type::INT8 => ScalarValue::Int64(Some(i64::from_be_bytes(fixed(bytes, "bigint")?))),
        Type::OID => ScalarValue::Int64(Some(u32::from_be_bytes(fixed(bytes, "oid")?).into())),
        Type::FLOAT4 => ScalarValue::Float32(Some(f32::from_be_bytes(fixed(bytes, "real")?))),
        Type::FLOAT8 => {
            ScalarValue::Float64(Some(f64::from_be_bytes(fixed(bytes, "double precision")?)))
        }
        Type::TEXT | Type::VARCHAR | Type::BPCHAR | Type::NAME | Type::UNKNOWN => {
            let s = std::str::from_utf8(bytes)
                .map_err(|_| user_error(BAD_ENCODING, "a text parameter is not valid UTF-8"))?;
            ScalarValue::Utf8(Some(s.to_string()))
        }
        Type::BYTEA => ScalarValue::Binary(Some(bytes.to_vec())),
        Type::DATE => {
            let days = i32::from_be_bytes(fixed(bytes, "date")?);
            ScalarValue::Date32(Some(days.checked_add(10_957).ok_or_else(|| {
                user_error("22008", "a binary date parameter is out of range")
            })?))
        }
        Type::TIMESTAMP | Type::TIMESTAMPTZ => {
            let micros = i64::from_be_bytes(fixed(bytes, "timestamp")?);
            let micros = micros.checked_add(946_684_800_000_000).ok_or_else(|| {
                user_error("22008", "a binary timestamp parameter is out of range")
            })?;
            let tz = (*ty == Type::TIMESTAMPTZ).then(|| "+00:00".into());
            ScalarValue::TimestampMicrosecond(Some(micros), tz)
        }
        Type::NUMERIC => numeric(bytes)?,
        _ => {
            return Err(user_error(
                "0A000",
                format!(
                    "binary parameters of type {} are not supported; send it as text",
                    ty.name()
                ),
            ));
        }
    })
}

/// PostgreSQL's binary numeric as a decimal of its display scale (at most 38 digits).
fn numeric(bytes: &[u8]) -> Result<ScalarValue, PgWireError> {
    let bad = |why: &str| user_error(INVALID_BINARY, format!("a binary numeric parameter {why}"));
    if bytes.len() < 8 {
        return Err(bad("is shorter than its header"));
    }
    let word = |i: usize| u16::from_be_bytes([bytes[i], bytes[i + 1]]);
    let ndigits = usize::from(word(0));
    let weight = i32::from(word(2) as i16);
    let sign = word(4);
    let dscale = word(6);
    if bytes.len() != 8 + 2 * ndigits {
        return Err(bad("has the wrong length for its digit count"));
    }
    if sign == 0xC000 || sign == 0xD000 || sign == 0xF000 {
        return Err(user_error(
            "22003",
            "NaN and infinite numeric parameters are not supported",
        ));
    }
    if sign != 0 && sign != 0x4000 {
        return Err(bad("has an invalid sign"));
    }
    if dscale > 38 {
        return Err(user_error(
            "22003",
            "a numeric parameter with more than 38 digits after the point is not supported",
        ));
    }
    // value = sum(d_i * 10000^(weight - i)); scaled by 10^dscale into an i128
    let mut unscaled: i128 = 0;
    let overflow = || user_error("22003", "a numeric parameter does not fit 38 digits");
    for i in 0..ndigits {
        let d = word(8 + 2 * i);
        if d >= 10_000 {
            return Err(bad("has a digit out of range"));
        }
        // the digit's power of ten relative to the scaled unit
        let power = 4 * (weight - i as i32) + i32::from(dscale);
        if power >= 0 {
            let p = 10i128.checked_pow(power as u32).ok_or_else(overflow)?;
            let term = i128::from(d).checked_mul(p).ok_or_else(overflow)?;
            unscaled = unscaled.checked_add(term).ok_or_else(overflow)?;
        } else if power > -4 {
            // digits beyond the display scale are dropped (PostgreSQL sends none)
            unscaled += i128::from(d) / 10i128.pow((-power) as u32);
        }
    }
    if sign == 0x4000 {
        unscaled = -unscaled;
    }
    let precision = unscaled
        .unsigned_abs()
        .to_string()
        .len()
        .max(usize::from(dscale) + 1);
    if precision > 38 {
        return Err(overflow());
    }
    Ok(ScalarValue::Decimal128(
        Some(unscaled),
        38.min(precision.max(1) as u8).max(dscale as u8),
        dscale as i8,
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use bytes::BytesMut;

    fn bin(ty: Type, bytes: &[u8]) -> Result<ScalarValue, String> {
        decode(Some(&Bytes::copy_from_slice(bytes)), true, Some(&ty), None)
            .map_err(|e| e.to_string())
    }

    #[test]
    fn binary_values_need_their_exact_width() {
        assert_eq!(
            bin(Type::INT4, &7i32.to_be_bytes()).unwrap(),
            ScalarValue::Int32(Some(7))
        );
        assert!(
            bin(Type::INT4, &[0, 0, 7])
                .unwrap_err()
                .contains("expected 4")
        );
        assert!(bin(Type::INT8, &[0; 9]).unwrap_err().contains("expected 8"));
        assert_eq!(
            bin(Type::DATE, &0i32.to_be_bytes()).unwrap(),
            ScalarValue::Date32(Some(10_957))
        );
        assert!(
            bin(Type::TEXT, &[0xff, 0xfe])
                .unwrap_err()
                .contains("UTF-8")
        );
        assert!(
            bin(Type::POINT, &[0; 16])
                .unwrap_err()
                .contains("not supported")
        );
    }

    #[test]
    fn numerics_decode_what_the_encoder_writes() {
        for (v, scale) in [
            (12345i128, 2i8),
            (-5, 2),
            (0, 3),
            (123456789, 0),
            (10000, 0),
            (7, 4),
        ] {
            let mut b = BytesMut::new();
            crate::types::numeric_binary(v, scale, &mut b);
            match bin(Type::NUMERIC, &b).unwrap() {
                ScalarValue::Decimal128(Some(got), _, s) => {
                    assert_eq!((got, s), (v, scale), "{v} scale {scale}")
                }
                other => panic!("{other:?}"),
            }
        }
        assert!(
            bin(Type::NUMERIC, &[0, 1, 0, 0, 0, 0, 0, 0])
                .unwrap_err()
                .contains("length")
        );
        assert!(
            bin(Type::NUMERIC, &[0, 0, 0, 0, 0xC0, 0, 0, 0])
                .unwrap_err()
                .contains("NaN")
        );
    }

    #[test]
    fn text_values_follow_the_declared_type_when_the_statement_does_not_say() {
        let t = |s: &str, ty: Type| {
            decode(
                Some(&Bytes::copy_from_slice(s.as_bytes())),
                false,
                Some(&ty),
                None,
            )
            .unwrap()
        };
        assert_eq!(t("42", Type::INT8), ScalarValue::Int64(Some(42)));
        assert_eq!(t("x", Type::TEXT), ScalarValue::Utf8(Some("x".into())));
        // the statement's type wins: the text is cast when the statement runs
        let v = decode(
            Some(&Bytes::from_static(b"42")),
            false,
            Some(&Type::INT8),
            Some(&DataType::Int32),
        )
        .unwrap();
        assert_eq!(v, ScalarValue::Utf8(Some("42".into())));
        assert_eq!(
            decode(None, false, None, Some(&DataType::Int32)).unwrap(),
            ScalarValue::Int32(None)
        );
    }
}
