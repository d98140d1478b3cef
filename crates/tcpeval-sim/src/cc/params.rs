//! An algorithm's `params` table, parsed once into the algorithm's typed config
//! struct. Each struct derives `Deserialize` (unknown fields denied, every field
//! defaulted) and `JsonSchema`; the schema is the one description of the
//! parameters: their names, types, defaults and ranges. Checking against it here
//! gives every algorithm the same errors, each naming its field (`params.NAME`).

use super::CcError;
use schemars::gen::SchemaSettings;
use schemars::schema::{InstanceType, RootSchema, Schema, SchemaObject, SingleOrVec};
use schemars::JsonSchema;
use serde::de::DeserializeOwned;
use serde_json::{Map, Value};

/// An algorithm's typed configuration.
pub trait AlgorithmConfig: DeserializeOwned + JsonSchema + Default {
    /// Checks the schema does not express (between parameters, or of whole
    /// numbers); `alg` is the algorithm's name for the messages.
    fn check(&self, _alg: &str) -> Result<(), CcError> {
        Ok(())
    }
}

/// The JSON Schema of a config struct (draft 7, as the engine's, subschemas
/// inline so each property is self-contained).
pub fn schema<T: JsonSchema>() -> RootSchema {
    let mut settings = SchemaSettings::draft07();
    settings.inline_subschemas = true;
    settings.into_generator().into_root_schema_for::<T>()
}

/// An error of parameter `name`.
pub fn error(name: &str, message: String) -> CcError {
    CcError { field: format!("params.{name}"), message }
}

/// Parse `map` into `T`. `name` is the algorithm as the scenario wrote it
/// (for the unknown-parameter message), `alg` its registry name.
pub fn parse<T: AlgorithmConfig>(name: &str, alg: &str, map: &Map<String, Value>) -> Result<T, CcError> {
    let root = schema::<T>();
    let props = root.schema.object.as_ref().map(|o| o.properties.clone()).unwrap_or_default();
    if let Some(k) = map.keys().find(|k| !props.contains_key(*k)) {
        let list = if props.is_empty() {
            "it takes none".to_string()
        } else {
            format!("allowed: {}", props.keys().cloned().collect::<Vec<_>>().join(", "))
        };
        return Err(error(k, format!("unknown parameter for {name}; {list}")));
    }
    for (k, v) in map {
        check_value::<T>(alg, k, v, &props[k].clone().into_object())?;
    }
    let cfg: T = serde_json::from_value(Value::Object(map.clone())).map_err(|e| CcError { field: "params".into(), message: e.to_string() })?;
    cfg.check(alg)?;
    Ok(cfg)
}

/// One parameter's value: of its type (deserialized alone, the rest defaulted)
/// and, for numbers, within the schema's range.
fn check_value<T: AlgorithmConfig>(alg: &str, k: &str, v: &Value, prop: &SchemaObject) -> Result<(), CcError> {
    let prop = &inner(prop);
    let alone = Value::Object(Map::from_iter([(k.to_string(), v.clone())]));
    if serde_json::from_value::<T>(alone).is_err() {
        return Err(error(k, format!("must be {} for {alg}", what(prop))));
    }
    let range = prop.number.as_ref().filter(|_| is(prop, InstanceType::Number));
    if let (Some(x), Some(r)) = (v.as_f64(), range) {
        let (lo, hi) = (r.minimum.unwrap_or(f64::MIN), r.maximum.unwrap_or(f64::MAX));
        if x < lo || x > hi {
            return Err(error(k, format!("{x} is outside [{lo}, {hi}] for {alg}")));
        }
    }
    Ok(())
}

/// A property with a default is wrapped (`allOf: [type]`) when its type is a
/// subschema (an enum); the type is inside.
fn inner(prop: &SchemaObject) -> SchemaObject {
    match prop.subschemas.as_ref().and_then(|s| s.all_of.as_ref()).and_then(|a| a.first()) {
        Some(Schema::Object(o)) => o.clone(),
        _ => prop.clone(),
    }
}

fn is(prop: &SchemaObject, t: InstanceType) -> bool {
    matches!(&prop.instance_type, Some(SingleOrVec::Single(x)) if **x == t)
}

/// The values of an enum property: one `enum`, or (variants with their own
/// doc comments) one single-value `enum` per `oneOf` branch.
fn enum_values(prop: &SchemaObject) -> Option<Vec<Value>> {
    if let Some(values) = &prop.enum_values {
        return Some(values.clone());
    }
    let branches = prop.subschemas.as_ref()?.one_of.as_ref()?;
    let values = branches.iter().map(|b| b.clone().into_object().enum_values.unwrap_or_default());
    Some(values.flatten().collect())
}

/// What a property accepts, in words.
fn what(prop: &SchemaObject) -> String {
    if let Some(values) = enum_values(prop) {
        return values.iter().map(Value::to_string).collect::<Vec<_>>().join(" or ");
    }
    let name = [(InstanceType::Number, "a number"), (InstanceType::Integer, "a whole number"), (InstanceType::Boolean, "true or false")]
        .into_iter()
        .find(|(t, _)| is(prop, *t));
    name.map_or("valid", |(_, w)| w).to_string()
}

/// Each parameter with its default, from the schema.
pub fn defaults<T: JsonSchema>() -> Map<String, Value> {
    let root = schema::<T>();
    let props = root.schema.object.map(|o| o.properties).unwrap_or_default();
    let default = |s: Schema| s.into_object().metadata.and_then(|m| m.default).unwrap_or(Value::Null);
    props.into_iter().map(|(k, s)| (k, default(s))).collect()
}

/// `parse` for the algorithms' unit tests: the error as `params.NAME: what`.
#[cfg(test)]
pub fn parse_map<T: AlgorithmConfig>(map: &Map<String, Value>) -> Result<T, String> {
    parse("test", "test", map).map_err(|e| e.to_string())
}

/// No parameters (Reno, HighSpeed).
#[derive(Clone, Debug, Default, serde::Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct NoParams {}

impl AlgorithmConfig for NoParams {}

#[cfg(test)]
mod tests {
    use super::*;

    /// A config of each kind of parameter.
    #[derive(Debug, Default, PartialEq, serde::Deserialize, serde::Serialize, JsonSchema)]
    #[serde(deny_unknown_fields, default)]
    struct Demo {
        #[schemars(range(min = 0.5, max = 1))]
        x: f64,
        n: u32,
        on: bool,
    }

    impl AlgorithmConfig for Demo {}

    fn parse_demo(v: Value) -> Result<Demo, CcError> {
        parse("demo", "demo", v.as_object().unwrap())
    }

    #[test]
    fn each_kind_of_bad_value_names_its_parameter_and_what_it_accepts() {
        let e = parse_demo(serde_json::json!({"n": 1.5})).unwrap_err();
        assert_eq!((e.field.as_str(), e.message.as_str()), ("params.n", "must be a whole number for demo"));
        let e = parse_demo(serde_json::json!({"on": 1})).unwrap_err();
        assert_eq!(e.message, "must be true or false for demo");
        let e = parse_demo(serde_json::json!({"x": "a"})).unwrap_err();
        assert_eq!(e.message, "must be a number for demo");
        let e = parse_demo(serde_json::json!({"x": 2})).unwrap_err();
        assert_eq!((e.field.as_str(), e.message.as_str()), ("params.x", "2 is outside [0.5, 1] for demo"));
        let e = parse_demo(serde_json::json!({"y": 2})).unwrap_err();
        assert_eq!((e.field.as_str(), e.message.as_str()), ("params.y", "unknown parameter for demo; allowed: n, on, x"));
    }

    #[test]
    fn given_values_are_kept_and_the_rest_defaulted() {
        assert_eq!(parse_demo(serde_json::json!({"x": 1, "on": true})).unwrap(), Demo { x: 1.0, n: 0, on: true });
        assert_eq!(defaults::<Demo>()["n"], Value::from(0));
    }

    #[test]
    fn no_params_takes_none() {
        let e = parse::<NoParams>("reno", "reno", serde_json::json!({"a": 1}).as_object().unwrap()).unwrap_err();
        assert_eq!(e.message, "unknown parameter for reno; it takes none");
    }
}
