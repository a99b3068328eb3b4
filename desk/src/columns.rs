//! Typed columns: an id or a name read from a row into its type, at this edge only. A
//! stored value that is not one is a corrupt row (an internal error naming the column):
//! the writers only ever store what these types print.

use sqlx::Row;

use crate::error::DomainResult;

/// An id column, read into its type.
pub fn stored_id<T>(
    r: &sqlx::any::AnyRow,
    column: &str,
    parse: fn(String) -> Result<T, domain::ids::IdError>,
) -> DomainResult<T> {
    parse(r.try_get::<String, _>(column)?).map_err(|e| anyhow::anyhow!("{column}: {e}").into())
}

/// A nullable id column, read into its type.
pub(crate) fn stored_opt_id<T>(
    r: &sqlx::any::AnyRow,
    column: &str,
    parse: fn(String) -> Result<T, domain::ids::IdError>,
) -> DomainResult<Option<T>> {
    r.try_get::<Option<String>, _>(column)?
        .map(parse)
        .transpose()
        .map_err(|e| anyhow::anyhow!("{column}: {e}").into())
}

/// A nullable column holding a name the engine defines (role, reason code, currency).
pub(crate) fn stored_name<T>(r: &sqlx::any::AnyRow, column: &str) -> DomainResult<Option<T>>
where
    T: std::str::FromStr,
    T::Err: std::fmt::Display,
{
    let Some(text) = r.try_get::<Option<String>, _>(column)? else {
        return Ok(None);
    };
    text.parse()
        .map(Some)
        .map_err(|e| anyhow::anyhow!("{column}: {e}").into())
}
