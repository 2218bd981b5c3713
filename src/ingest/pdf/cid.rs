//! CID to Unicode for the registered character collections, for Type0 fonts with
//! Identity encoding and no ToUnicode CMap.

/// A character collection's CID to Unicode table.
#[derive(Debug)]
pub struct Collection {
    table: &'static [u32],
}

impl Collection {
    /// The text of `cid`, if known.
    pub fn text(&self, cid: u32) -> Option<String> {
        let u = *self.table.get(cid as usize)?;
        (u != 0)
            .then(|| char::from_u32(u).map(String::from))
            .flatten()
    }
}

/// The collection named by a CIDSystemInfo `/Ordering`, if Quire knows it.
pub fn collection(_ordering: &[u8]) -> Option<&'static Collection> {
    None
}
