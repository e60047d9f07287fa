//! Text-to-value deserializers, one per type, with PostgreSQL's validation rules.
