//! Which Arrow types cross to Spark unchanged: those Spark's `ArrowUtils.fromArrowSchema` maps
//! and its `ArrowColumnVector` reads. Other types are refused with the column named; the Python
//! data source casts some of them (unsigned integers, nanosecond timestamps, fixed-size lists,
//! views) and is the path for such files until those casts move into the core.

use arrow_schema::{DataType, Field, Schema, TimeUnit};

/// Checks that every field of `schema` crosses to Spark unchanged.
pub fn check_schema(schema: &Schema) -> Result<(), String> {
    schema.fields().iter().try_for_each(|field| check_field(field, field.name()))
}

fn check_field(field: &Field, path: &str) -> Result<(), String> {
    let refuse = |why: &str| {
        Err(format!(
            "column {path:?} has Arrow type {}, which the JVM reader does not pass to Spark {why}; \
             read it with the Python data source (looseleaf.spark.register(spark, jvm=False))",
            field.data_type()
        ))
    };
    match field.data_type() {
        DataType::Null
        | DataType::Boolean
        | DataType::Int8
        | DataType::Int16
        | DataType::Int32
        | DataType::Int64
        | DataType::Float32
        | DataType::Float64
        | DataType::Utf8
        | DataType::LargeUtf8
        | DataType::Binary
        | DataType::LargeBinary
        | DataType::Date32 => Ok(()),
        DataType::Decimal128(precision, _) if *precision <= 38 => Ok(()),
        DataType::Timestamp(TimeUnit::Microsecond, _) => Ok(()),
        DataType::Timestamp(..) => refuse("(Spark holds microseconds)"),
        DataType::List(item) | DataType::LargeList(item) => check_field(item, &format!("{path}.{}", item.name())),
        DataType::Map(entries, _) => check_field(entries, path),
        DataType::Struct(fields) => {
            fields.iter().try_for_each(|child| check_field(child, &format!("{path}.{}", child.name())))
        }
        _ => refuse("yet"),
    }
}
