//! The physical metadata flags of `shardwright pyramid`: `--scale`, `--translation`,
//! `--units`, `--channel-names`, `--channel-colors` (OME-Zarr 0.5 `scale`, `translation`,
//! axis units and `omero` channels).

use shardwright::pyramid::image_metadata::{Channel, ImageMetadata};

type Failure = Box<dyn std::error::Error>;

/// The image's physical metadata, as flags.
#[derive(clap::Args, Default)]
pub(crate) struct Physical {
    /// Level 0's physical pixel size per axis, e.g. 1,1,2.0,0.406,0.406 (default 1);
    /// level k's is it times the factors so far.
    #[arg(long)]
    scale: Option<String>,
    /// Level 0's physical offset per axis, e.g. 0,0,0,10.5,-3 (default 0).
    #[arg(long)]
    translation: Option<String>,
    /// An OME unit per axis, e.g. second,,micrometer,micrometer,micrometer (empty: none;
    /// µm, um, nm, s, ms are accepted and written by their OME names).
    #[arg(long)]
    units: Option<String>,
    /// Channel labels, one per element of the c axis, e.g. DAPI,GFP.
    #[arg(long)]
    channel_names: Option<String>,
    /// Channel colours, one per element of the c axis: RRGGBB, #RRGGBB or red, green,
    /// blue, cyan, magenta, yellow, white, gray, e.g. 0000FF,00FF00.
    #[arg(long)]
    channel_colors: Option<String>,
}

fn floats(text: &Option<String>, what: &str) -> Result<Option<Vec<f64>>, Failure> {
    text.as_ref()
        .map(|t| {
            t.split(',')
                .map(|p| {
                    p.trim().parse::<f64>().map_err(|_| {
                        format!("--{what} '{t}': expected numbers separated by ','").into()
                    })
                })
                .collect()
        })
        .transpose()
}

fn words(text: &Option<String>) -> Option<Vec<Option<String>>> {
    text.as_ref().map(|t| {
        t.split(',')
            .map(|p| Some(p.trim().to_string()).filter(|p| !p.is_empty()))
            .collect()
    })
}

impl Physical {
    /// The metadata the flags give (checked against the image later, by the build).
    pub(crate) fn image(&self) -> Result<ImageMetadata, Failure> {
        let names = words(&self.channel_names);
        let colors = words(&self.channel_colors);
        let channels = match (&names, &colors) {
            (None, None) => None,
            (Some(n), Some(c)) if n.len() != c.len() => {
                return Err(format!(
                    "--channel-names has {} entries and --channel-colors {}: give one of each \
                     per channel",
                    n.len(),
                    c.len()
                )
                .into())
            }
            _ => {
                let count = names.as_ref().or(colors.as_ref()).map_or(0, Vec::len);
                Some(
                    (0..count)
                        .map(|i| Channel {
                            label: names.as_ref().and_then(|n| n[i].clone()),
                            color: colors.as_ref().and_then(|c| c[i].clone()),
                        })
                        .collect(),
                )
            }
        };
        Ok(ImageMetadata {
            name: None,
            units: words(&self.units),
            scale: floats(&self.scale, "scale")?,
            translation: floats(&self.translation, "translation")?,
            channels,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn flags_make_the_metadata() {
        let flags = Physical {
            scale: Some("1, 0.5".into()),
            units: Some(",µm".into()),
            channel_names: Some("DAPI,GFP".into()),
            channel_colors: Some("blue,".into()),
            ..Default::default()
        };
        let image = flags.image().unwrap();
        assert_eq!(image.scale, Some(vec![1.0, 0.5]));
        assert_eq!(image.units, Some(vec![None, Some("µm".into())]));
        let channels = image.channels.unwrap();
        assert_eq!(channels[1].label.as_deref(), Some("GFP"));
        assert_eq!(channels[1].color, None);
        let bad = Physical {
            translation: Some("1,x".into()),
            ..Default::default()
        };
        assert!(bad
            .image()
            .unwrap_err()
            .to_string()
            .contains("--translation '1,x'"));
    }
}
