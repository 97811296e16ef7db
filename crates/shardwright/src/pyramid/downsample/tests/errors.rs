//! Method names and errors.

use crate::pyramid::downsample::{check_supported, downsample, DownsampleError, Method};

#[test]
fn method_names_round_trip() {
    for m in Method::ALL {
        assert_eq!(m.name().parse::<Method>().unwrap(), m);
        assert_eq!(m.to_string(), m.name());
    }
    let err = "foo".parse::<Method>().unwrap_err();
    assert_eq!(
        err,
        DownsampleError::UnknownMethod {
            given: "foo".into()
        }
    );
    assert_eq!(
        err.to_string(),
        "unknown downsampling method 'foo'; expected one of mean, min, max, mode, median, stride"
    );
    assert!("Mean".parse::<Method>().is_err());
}

#[test]
fn errors() {
    let err = downsample(&[0; 4], &[2, 2], &[2], "uint8", Method::Mean).unwrap_err();
    assert_eq!(
        err,
        DownsampleError::Factors {
            factors: vec![2],
            ndim: 2
        }
    );
    assert!(
        err.to_string().contains("expected 2 downsampling factors"),
        "{err}"
    );
    assert!(err.to_string().contains("[2]"), "{err}");

    let err = downsample(&[0; 4], &[2, 2], &[2, 0], "uint8", Method::Mean).unwrap_err();
    assert_eq!(
        err,
        DownsampleError::Factors {
            factors: vec![2, 0],
            ndim: 2
        }
    );
    assert!(err.to_string().contains("at least 1"), "{err}");

    let err = downsample(&[0; 7], &[2, 2], &[2, 2], "uint16", Method::Mean).unwrap_err();
    assert_eq!(
        err,
        DownsampleError::InputLength {
            shape: vec![2, 2],
            expected: 8,
            got: 7
        }
    );
    assert_eq!(
        err.to_string(),
        "an input of shape [2, 2] needs 8 bytes; got 7"
    );

    let err = downsample(&[0; 8], &[u64::MAX, 2], &[2, 2], "uint16", Method::Mean).unwrap_err();
    assert!(matches!(
        err,
        DownsampleError::InputLength {
            expected: usize::MAX,
            ..
        }
    ));

    for dtype in ["float16", "complex64", "string", "bytes", "int4", ""] {
        let err = downsample(&[0; 8], &[4], &[2], dtype, Method::Median).unwrap_err();
        assert_eq!(
            err,
            DownsampleError::UnsupportedDataType {
                data_type: dtype.into(),
                method: Method::Median
            }
        );
        assert!(err.to_string().contains(&format!("'{dtype}'")), "{err}");
        assert!(err.to_string().contains("median"), "{err}");
        assert!(check_supported(dtype, Method::Mean)
            .unwrap_err()
            .to_string()
            .contains("mean"));
    }
    for dtype in [
        "bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64",
        "float32", "float64",
    ] {
        for m in Method::ALL {
            check_supported(dtype, m).unwrap();
        }
    }
}
