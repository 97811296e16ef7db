//! Writes of one value over whole inner chunks: a chunk of one value, and a region of one
//! value encoded once and placed in every chunk it covers.

use super::ShardWriter;
use crate::domain::Domain;
use crate::error::{Error, Result};

impl ShardWriter {
    /// Write one inner chunk whose every element is `value` (one element's native-endian
    /// bytes). A chunk of the fill value costs nothing to encode.
    ///
    /// # Errors
    /// As [`write_chunk`](Self::write_chunk); [`Error::DataLength`] if `value` is not one
    /// element.
    pub fn write_chunk_value(&self, chunk: &Domain, value: &[u8]) -> Result<()> {
        let slot = self.slot_of(chunk)?;
        if value.len() != self.layout.element_size() {
            return Err(Error::DataLength {
                region: Box::new(chunk.clone()),
                shape: vec![],
                expected: self.layout.element_size(),
                got: value.len(),
            });
        }
        if value == self.layout.fill_value_bytes() {
            return self.set_empty(slot);
        }
        // One chunk: encoded on the pool, as any other chunk.
        let data = crate::buffer::filled(chunk.size(), value)?;
        let raw = if chunk.shape() == self.layout.chunk_shape() {
            data
        } else {
            self.padded(chunk, &data)?
        };
        self.submit(slot, raw)
    }

    /// Write `value` over every element of `chunk`, the inner chunk in `slot`. A whole
    /// (unclipped) chunk is encoded once into `constant` and placed from there, so a region
    /// of one value costs one encode however many chunks it covers.
    pub(super) fn write_value_at(
        &self,
        slot: usize,
        chunk: &Domain,
        value: &[u8],
        constant: &mut Option<Option<Vec<u8>>>,
    ) -> Result<()> {
        if value == self.layout.fill_value_bytes() {
            return self.set_empty(slot);
        }
        if chunk.shape() != self.layout.chunk_shape() {
            // Clipped at the array edge: the value inside the array, the fill value outside.
            let data = crate::buffer::filled(chunk.size(), value)?;
            return self.submit(slot, self.padded(chunk, &data)?);
        }
        let encoded = match constant {
            Some(encoded) => encoded.clone(),
            None => {
                let raw = crate::buffer::filled(self.layout.chunk_elements(), value)?;
                // As on the pool: a panic in a codec is an error, not a crash.
                let encoded = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                    crate::format::chunk::encode(&self.layout, raw)
                }))
                .unwrap_or_else(|panic| {
                    Err(crate::format::FormatError::Codec(
                        crate::error::panic_message(&*panic),
                    ))
                })?;
                constant.insert(encoded).clone()
            }
        };
        let mut partials = self.partials();
        partials.remove(&slot);
        #[cfg(test)]
        super::race_point();
        self.slots.submit_encoded(slot, encoded)?;
        self.observe_slot(slot, Some(value))
    }
}
