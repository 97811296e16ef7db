use super::*;
use crate::layout::{ArraySpec, Layout};

/// The `zarr.json` zarr-python 3.4 (and 3.1) writes for a (4,) array of shards (4,) and
/// inner chunks (2,), with `data_type`, `fill_value` and the `bytes` codec given.
fn zarr_python(data_type: Value, fill_value: Value, bytes: Value) -> String {
    json!({
        "shape": [4], "data_type": data_type,
        "chunk_grid": {"name": "regular", "configuration": {"chunk_shape": [4]}},
        "chunk_key_encoding": {"name": "default", "configuration": {"separator": "/"}},
        "fill_value": fill_value,
        "codecs": [{"name": "sharding_indexed", "configuration": {
            "chunk_shape": [2],
            "codecs": [bytes, {"name": "zstd", "configuration": {"level": 0, "checksum": false}}],
            "index_codecs": [{"name": "bytes", "configuration": {"endian": "little"}}, {"name": "crc32c"}],
            "index_location": "end"}}],
        "attributes": {}, "zarr_format": 3, "node_type": "array", "storage_transformers": []
    })
    .to_string()
}

fn little() -> Value {
    json!({"name": "bytes", "configuration": {"endian": "little"}})
}

fn time(name: &str, unit: &str, scale: u32) -> Value {
    json!({"name": name, "configuration": {"unit": unit, "scale_factor": scale}})
}

fn length(name: &str, n: u64) -> Value {
    json!({"name": name, "configuration": {"length_bytes": n}})
}

#[test]
fn every_time_unit_zarr_python_writes_is_read_with_its_fill_values() {
    let units = [
        "Y", "M", "W", "D", "h", "m", "s", "ms", "us", "ns", "ps", "fs", "as", "generic",
    ];
    for name in ["numpy.datetime64", "numpy.timedelta64"] {
        for unit in units {
            for scale in [1, 10] {
                for (fill, want) in [
                    (json!(-9223372036854775808i64), i64::MIN),
                    (json!("NaT"), i64::MIN),
                    (json!(18262), 18262),
                ] {
                    let json = zarr_python(time(name, unit, scale), fill, little());
                    let layout = Layout::from_json(json.as_bytes()).unwrap();
                    assert_eq!(layout.element_size(), 8);
                    assert_eq!(layout.fill_value_bytes(), want.to_ne_bytes());
                    assert_eq!(layout.data_type_name(), name);
                    let spec = time(name, unit, scale).to_string();
                    assert_eq!(layout.data_type_spec(), spec);
                }
            }
        }
    }
}

#[test]
fn the_micro_sign_unit_is_named_us() {
    let json = zarr_python(time("numpy.datetime64", "μs", 1), json!(0), little());
    let layout = Layout::from_json(json.as_bytes()).unwrap();
    assert_eq!(
        layout.data_type_spec(),
        time("numpy.datetime64", "us", 1).to_string()
    );
    assert!(layout.json().unwrap().contains("μs")); // zarr.json as written
}

#[test]
fn fixed_length_utf32_fill_values_are_strings() {
    for (fill, chars) in [("", ""), ("ab", "ab"), ("é🎉", "é🎉")] {
        let json = zarr_python(length("fixed_length_utf32", 20), json!(fill), little());
        let layout = Layout::from_json(json.as_bytes()).unwrap();
        let mut want: Vec<u8> = chars
            .chars()
            .flat_map(|c| (c as u32).to_ne_bytes())
            .collect();
        want.resize(20, 0);
        assert_eq!(layout.fill_value_bytes(), want);
    }
    let long = zarr_python(length("fixed_length_utf32", 8), json!("abc"), little());
    assert!(matches!(
        Layout::from_json(long.as_bytes()),
        Err(LayoutError::Invalid(_))
    ));
}

#[test]
fn bytes_types_zarrs_lacks_are_raw_bits_with_base64_fill_values() {
    let plain = json!({"name": "bytes"});
    let cases = [
        ("null_terminated_bytes", 5, json!(""), vec![0u8; 5]),
        (
            "null_terminated_bytes",
            5,
            json!("YWI="),
            b"ab\0\0\0".to_vec(),
        ),
        ("null_terminated_bytes", 2, json!("YWI="), b"ab".to_vec()),
        ("raw_bytes", 4, json!("AQIDBA=="), vec![1, 2, 3, 4]),
        ("raw_bytes", 4, json!("AAAAAA=="), vec![0; 4]),
        ("raw_bytes", 3, json!([7, 8, 9]), vec![7, 8, 9]),
    ];
    for (name, n, fill, want) in cases {
        let json = zarr_python(length(name, n), fill, plain.clone());
        let layout = Layout::from_json(json.as_bytes()).unwrap();
        assert_eq!(layout.element_size(), n as usize);
        assert_eq!(layout.fill_value_bytes(), want);
        assert_eq!(layout.data_type_name(), name);
        assert_eq!(layout.data_type_spec(), length(name, n).to_string());
        assert_eq!(layout.metadata().data_type.name(), name); // kept as written
    }
    for bad in [
        json!("YWJj"),
        json!("not base64!"),
        json!(3),
        json!([1, 300]),
    ] {
        let json = zarr_python(length("null_terminated_bytes", 2), bad, plain.clone());
        assert!(matches!(
            Layout::from_json(json.as_bytes()),
            Err(LayoutError::Invalid(_))
        ));
    }
    for config in [
        json!({}),
        json!({"length_bytes": 0}),
        json!({"length_bytes": 2, "x": 1}),
    ] {
        let data_type = json!({"name": "raw_bytes", "configuration": config});
        let json = zarr_python(data_type, json!(""), plain.clone());
        let err = Layout::from_json(json.as_bytes()).unwrap_err();
        assert!(err.to_string().contains("length_bytes"), "{err}");
    }
}

#[test]
fn big_endian_bytes_codecs_are_accepted() {
    let big = json!({"name": "bytes", "configuration": {"endian": "big"}});
    for (data_type, fill) in [
        (time("numpy.datetime64", "s", 1), json!(0)),
        (length("fixed_length_utf32", 12), json!("")),
    ] {
        let json = zarr_python(data_type, fill, big.clone());
        Layout::from_json(json.as_bytes()).unwrap();
    }
}

#[test]
fn variable_length_types_are_refused_with_a_fixed_size_suggestion() {
    for name in ["string", "bytes", "variable_length_bytes"] {
        let json = zarr_python(json!(name), json!(""), little());
        let err = Layout::from_json(json.as_bytes()).unwrap_err();
        assert!(matches!(err, LayoutError::Unsupported(_)), "{err}");
        let text = err.to_string();
        assert!(text.contains("variable-length"), "{text}");
        assert!(
            text.contains("fixed_length_utf32") && text.contains("'U<n>'"),
            "{text}"
        );
    }
    let structured = json!({"name": "structured", "configuration": {"fields": [["a", "int8"]]}});
    let json = zarr_python(structured, json!("AA=="), little());
    let err = Layout::from_json(json.as_bytes()).unwrap_err();
    assert!(err.to_string().contains("structured"), "{err}");
}

#[test]
fn array_spec_writes_what_zarr_python_writes() {
    let cases = [
        (
            time("numpy.datetime64", "s", 10),
            None,
            json!(-9223372036854775808i64),
            true,
        ),
        (
            time("numpy.timedelta64", "ns", 1),
            Some(json!("NaT")),
            json!(-9223372036854775808i64),
            true,
        ),
        (
            time("numpy.datetime64", "D", 1),
            Some(json!(18262)),
            json!(18262),
            true,
        ),
        (length("fixed_length_utf32", 20), None, json!(""), true),
        (
            length("fixed_length_utf32", 20),
            Some(json!("ab")),
            json!("ab"),
            true,
        ),
        (length("null_terminated_bytes", 5), None, json!(""), false),
        (
            length("null_terminated_bytes", 5),
            Some(json!("YWI=")),
            json!("YWI="),
            false,
        ),
        (length("raw_bytes", 4), None, json!("AAAAAA=="), false),
        (
            length("raw_bytes", 4),
            Some(json!([1, 2, 3, 4])),
            json!("AQIDBA=="),
            false,
        ),
    ];
    for (data_type, fill, fill_json, endian) in cases {
        let mut spec = ArraySpec::new(vec![4], &data_type.to_string(), vec![2]).shards(vec![4]);
        if let Some(fill) = fill {
            spec = spec.fill_value(fill);
        }
        let written: Value = serde_json::from_str(&spec.to_json().unwrap()).unwrap();
        assert_eq!(written["data_type"], data_type);
        assert_eq!(written["fill_value"], fill_json, "{data_type}");
        let bytes = &written["codecs"][0]["configuration"]["codecs"][0];
        let want = if endian {
            little()
        } else {
            json!({"name": "bytes"})
        };
        assert_eq!(bytes, &want, "{data_type}");
    }
}

#[test]
fn specs_name_types_without_configuration_by_name() {
    assert_eq!(resolve_spec("uint16").unwrap().spec, "uint16");
    assert_eq!(resolve_spec("r24").unwrap().family, Family::Bytes);
    assert!(matches!(
        resolve_spec("{not json"),
        Err(LayoutError::Invalid(_))
    ));
    assert_eq!(
        element_size_of(&time("numpy.timedelta64", "ms", 1).to_string()),
        Some(8)
    );
}
