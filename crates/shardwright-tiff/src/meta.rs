//! What a file's metadata says of its pages and pixels: OME-XML (an OME-TIFF), an ImageJ
//! hyperstack's description, or, for a plain TIFF, its page count and resolution tags.

use quick_xml::events::{BytesStart, Event};
use shardwright::pyramid::image_metadata::{unit_name, Channel};

use crate::error::TiffError;
use crate::file::Page;

/// The axes a file's pages run along and what its metadata says of each axis.
#[derive(Debug, Clone, Default)]
pub(crate) struct Described {
    /// The axes the pages run along, fastest first, with their sizes.
    pub(crate) page_axes: Vec<(&'static str, u64)>,
    /// The chain index of the image's first page.
    pub(crate) first_ifd: usize,
    /// Pixel size and unit (an OME name) by axis name.
    pub(crate) scales: Vec<(&'static str, f64, &'static str)>,
    /// The channels' labels and colours, if the metadata names any.
    pub(crate) channels: Option<Vec<Channel>>,
    /// `OME-XML`, `ImageJ` or `TIFF`.
    pub(crate) source_name: &'static str,
}

/// What the first page's description (and the pages) say: OME-XML, ImageJ or plain.
pub(crate) fn describe(path: &str, pages: &[Page]) -> Result<Described, TiffError> {
    let Some(first) = pages.first() else {
        return Err(TiffError::Layout {
            path: path.to_string(),
            message: "the file has no full-resolution page; expected at least one".into(),
        });
    };
    let text = first.description.as_deref().unwrap_or("").trim_start();
    let xml = text.starts_with("<?xml") || text.starts_with("<OME");
    if xml && (text.contains("<OME") || text.contains(":OME")) {
        return ome(path, text, first.samples);
    }
    if text.starts_with("ImageJ=") {
        return Ok(imagej(text, first));
    }
    let mut described = Described {
        source_name: "TIFF",
        ..Default::default()
    };
    if pages.len() > 1 {
        described.page_axes.push(("z", pages.len() as u64));
    }
    if let Some((x, y, unit)) = first.resolution {
        let per_micrometer = match unit {
            2 if x != 72.0 || y != 72.0 => 1.0 / 25_400.0,
            3 => 1.0 / 10_000.0,
            _ => 0.0,
        };
        if per_micrometer > 0.0 && x > 0.0 && y > 0.0 && (x != 1.0 || y != 1.0) {
            described
                .scales
                .push(("x", 1.0 / (x * per_micrometer), "micrometer"));
            described
                .scales
                .push(("y", 1.0 / (y * per_micrometer), "micrometer"));
        }
    }
    Ok(described)
}

fn attributes(element: &BytesStart<'_>) -> Vec<(String, String)> {
    element
        .attributes()
        .flatten()
        .map(|a| {
            let key = String::from_utf8_lossy(a.key.local_name().as_ref()).into_owned();
            let value = a
                .normalized_value(quick_xml::XmlVersion::Implicit1_0)
                .map(|v| v.into_owned())
                .unwrap_or_else(|_| String::from_utf8_lossy(&a.value).into_owned());
            (key, value)
        })
        .collect()
}

fn get<'a>(attrs: &'a [(String, String)], key: &str) -> Option<&'a str> {
    attrs
        .iter()
        .find(|(k, _)| k == key)
        .map(|(_, v)| v.as_str())
}

/// The first Image of an OME-XML document (other images, series of a multi-series
/// OME-TIFF, are left out).
fn ome(path: &str, xml: &str, samples: u16) -> Result<Described, TiffError> {
    let fail = |message: String| TiffError::Metadata {
        path: path.to_string(),
        source_name: "OME-XML".into(),
        message,
    };
    let mut reader = quick_xml::Reader::from_str(xml);
    let (mut pixels, mut channels, mut tiff_data) = (None, Vec::new(), None);
    let mut in_image = false;
    loop {
        match reader.read_event() {
            Ok(Event::Start(e) | Event::Empty(e)) => match e.local_name().as_ref() {
                b"Image" if pixels.is_none() => in_image = true,
                b"Pixels" if in_image && pixels.is_none() => pixels = Some(attributes(&e)),
                b"Channel" if in_image => channels.push(attributes(&e)),
                b"TiffData" if in_image && tiff_data.is_none() => tiff_data = Some(attributes(&e)),
                _ => {}
            },
            Ok(Event::End(e)) if e.local_name().as_ref() == b"Image" && in_image => break,
            Ok(Event::Eof) => break,
            Ok(_) => {}
            Err(e) => return Err(fail(format!("malformed XML: {e}"))),
        }
    }
    let pixels = pixels.ok_or_else(|| fail("no Image with Pixels; expected one".into()))?;
    let size = |key: &str| -> Result<u64, TiffError> {
        match get(&pixels, key) {
            None => Ok(1),
            Some(v) => v
                .parse::<u64>()
                .ok()
                .filter(|n| *n > 0)
                .ok_or_else(|| fail(format!("{key}=\"{v}\"; expected a positive integer"))),
        }
    };
    let order = get(&pixels, "DimensionOrder").unwrap_or("XYZCT");
    let mut size_c = size("SizeC")?;
    let samples = u64::from(samples);
    if samples > 1 && size_c % samples == 0 {
        size_c /= samples;
    }
    let mut page_axes = Vec::new();
    for axis in order.chars().skip(2) {
        let entry = match axis {
            'Z' => ("z", size("SizeZ")?),
            'C' => ("c", size_c),
            'T' => ("t", size("SizeT")?),
            _ => {
                return Err(fail(format!(
                    "DimensionOrder=\"{order}\"; expected XY then Z, C and T in some order"
                )))
            }
        };
        page_axes.push(entry);
    }
    if page_axes.len() != 3 {
        return Err(fail(format!(
            "DimensionOrder=\"{order}\"; expected XY then Z, C and T in some order"
        )));
    }
    let mut scales = Vec::new();
    for (axis, key, default) in [
        ("x", "PhysicalSizeX", "µm"),
        ("y", "PhysicalSizeY", "µm"),
        ("z", "PhysicalSizeZ", "µm"),
        ("t", "TimeIncrement", "s"),
    ] {
        let value = get(&pixels, key).and_then(|v| v.parse::<f64>().ok());
        let unit_key = if axis == "t" {
            "TimeIncrementUnit".to_string()
        } else {
            format!("{key}Unit")
        };
        let unit = unit_name(get(&pixels, &unit_key).unwrap_or(default));
        if let (Some(value), Some(unit)) = (value, unit) {
            if value.is_finite() && value > 0.0 {
                scales.push((axis, value, unit));
            }
        }
    }
    let channels: Vec<Channel> = channels
        .iter()
        .map(|attrs| Channel {
            label: get(attrs, "Name").map(str::to_string),
            color: get(attrs, "Color")
                .and_then(|c| c.parse::<i64>().ok())
                .map(|c| format!("{:06X}", ((c as u32) >> 8) & 0xFF_FFFF)),
        })
        .collect();
    // Channels that name nothing (tifffile writes one empty element per channel) say
    // nothing: the image's defaults serve better than a list of blanks.
    let named = channels
        .iter()
        .any(|c| c.label.is_some() || c.color.is_some());
    let channels = named.then_some(channels);
    let first_ifd = tiff_data
        .as_deref()
        .and_then(|a| get(a, "IFD"))
        .and_then(|v| v.parse().ok())
        .unwrap_or(0);
    Ok(Described {
        page_axes,
        first_ifd,
        scales,
        channels,
        source_name: "OME-XML",
    })
}

/// An ImageJ hyperstack's description: pages run channels fastest, then slices, then
/// frames; `spacing` (z) and the resolution are in `unit`, `finterval` in seconds.
fn imagej(text: &str, first: &Page) -> Described {
    let value = |key: &str| {
        text.lines()
            .find_map(|line| line.strip_prefix(key)?.strip_prefix('='))
            .map(str::trim)
    };
    let count = |key| value(key).and_then(|v| v.parse::<u64>().ok()).unwrap_or(1);
    let (channels, slices, frames) = (count("channels"), count("slices"), count("frames"));
    let images = count("images");
    // (A product past u64, from sizes no file has, is not 1: the image's page count
    // check reports it.)
    let one = channels
        .checked_mul(slices)
        .and_then(|n| n.checked_mul(frames))
        == Some(1);
    let slices = if one { images } else { slices };
    let mut scales = Vec::new();
    let unit = value("unit").map(|u| u.replace("\\u00B5", "µ"));
    if let Some(unit) = unit.as_deref().and_then(unit_name) {
        if let Some((x, y, _)) = first.resolution {
            if x > 0.0 && y > 0.0 {
                scales.push(("x", 1.0 / x, unit));
                scales.push(("y", 1.0 / y, unit));
            }
        }
        if let Some(z) = value("spacing").and_then(|v| v.parse::<f64>().ok()) {
            if z.is_finite() && z > 0.0 {
                scales.push(("z", z, unit));
            }
        }
    }
    if let Some(t) = value("finterval").and_then(|v| v.parse::<f64>().ok()) {
        if t.is_finite() && t > 0.0 {
            scales.push(("t", t, "second"));
        }
    }
    Described {
        page_axes: vec![("c", channels), ("z", slices), ("t", frames)],
        first_ifd: first.ifd,
        scales,
        channels: None,
        source_name: "ImageJ",
    }
}
