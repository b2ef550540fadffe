//! An Octavia object's id as held in the router read back: 16 bytes when it is a UUID.
//!
//! Octavia's ids are UUIDs in their canonical text form (36 characters). Held as a `String`,
//! each costs 24 bytes plus a 48-byte heap block; at 10k Ingresses the router read back holds
//! 100,000 member ids. Parsed, a UUID is 16 bytes inline and no allocation. An id that is not a
//! canonical UUID (another driver's, a test's) is kept exactly as sent.

use std::borrow::Cow;
use std::fmt;

/// An id as Octavia sent it; [`fmt::Display`] gives back exactly that text.
#[derive(Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum ObjectId {
    /// A canonical (lower-case, hyphenated) UUID, as its 16 bytes.
    Uuid([u8; 16]),
    /// Any other id, as sent.
    Other(Box<str>),
}

/// Where the hyphens of the canonical UUID form are.
const HYPHENS: [usize; 4] = [8, 13, 18, 23];

impl ObjectId {
    pub fn new(id: &str) -> Self {
        match parse_uuid(id) {
            Some(bytes) => Self::Uuid(bytes),
            None => Self::Other(id.into()),
        }
    }

    /// The id's text: borrowed when held as sent, written out for a UUID.
    pub fn text(&self) -> Cow<'_, str> {
        match self {
            Self::Uuid(_) => Cow::Owned(self.to_string()),
            Self::Other(s) => Cow::Borrowed(s),
        }
    }
}

/// The 16 bytes of `s` if it is a UUID in exactly the form [`ObjectId`]'s `Display` writes
/// (lower-case hex), so that the text sent comes back unchanged; `None` otherwise.
fn parse_uuid(s: &str) -> Option<[u8; 16]> {
    let b = s.as_bytes();
    if b.len() != 36 || HYPHENS.iter().any(|&i| b[i] != b'-') {
        return None;
    }
    let mut digits = b.iter().enumerate().filter(|(i, _)| !HYPHENS.contains(i)).map(|(_, c)| match c {
        b'0'..=b'9' => Some(c - b'0'),
        b'a'..=b'f' => Some(c - b'a' + 10),
        _ => None,
    });
    let mut out = [0u8; 16];
    for byte in &mut out {
        *byte = (digits.next()?? << 4) | digits.next()??;
    }
    Some(out)
}

impl fmt::Display for ObjectId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Uuid(b) => {
                for (i, byte) in b.iter().enumerate() {
                    if matches!(i, 4 | 6 | 8 | 10) {
                        f.write_str("-")?;
                    }
                    write!(f, "{byte:02x}")?;
                }
                Ok(())
            }
            Self::Other(s) => f.write_str(s),
        }
    }
}

/// As the `String` it replaces showed it.
impl fmt::Debug for ObjectId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(&*self.text(), f)
    }
}

/// As the text sent (`show -o json` prints ids).
impl serde::Serialize for ObjectId {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

/// The empty id (of an object built in a test, or not yet created), as a `String`'s default.
impl Default for ObjectId {
    fn default() -> Self {
        Self::Other(Box::default())
    }
}

impl From<&str> for ObjectId {
    fn from(id: &str) -> Self {
        Self::new(id)
    }
}

impl From<String> for ObjectId {
    fn from(id: String) -> Self {
        match parse_uuid(&id) {
            Some(bytes) => Self::Uuid(bytes),
            None => Self::Other(id.into_boxed_str()),
        }
    }
}

impl PartialEq<str> for ObjectId {
    fn eq(&self, other: &str) -> bool {
        match self {
            Self::Uuid(b) => parse_uuid(other).as_ref() == Some(b),
            Self::Other(s) => &**s == other,
        }
    }
}

impl PartialEq<String> for ObjectId {
    fn eq(&self, other: &String) -> bool {
        *self == **other
    }
}

impl PartialEq<&str> for ObjectId {
    fn eq(&self, other: &&str) -> bool {
        *self == **other
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_octavia_uuid_is_held_in_16_bytes_and_gives_back_the_text_sent() {
        let sent = "8b4f2e1c-3d5a-4f6b-9c7d-0e1f2a3b4c5d";
        let id = ObjectId::new(sent);
        assert!(matches!(id, ObjectId::Uuid(_)));
        assert_eq!(id.to_string(), sent);
        assert_eq!(id.text(), sent);
        assert_eq!(format!("{id:?}"), format!("{sent:?}"));
        assert_eq!(id, *sent);
        assert_eq!(ObjectId::from(sent.to_string()), id);
        assert_ne!(id, *"8b4f2e1c-3d5a-4f6b-9c7d-0e1f2a3b4c5e");
        // No heap block: the enum is the id (a String was 24 bytes plus 48 on the heap).
        assert!(std::mem::size_of::<ObjectId>() <= 24);
    }

    #[test]
    fn show_json_prints_an_id_as_the_text_sent() {
        for sent in ["8b4f2e1c-3d5a-4f6b-9c7d-0e1f2a3b4c5d", "sim-42"] {
            assert_eq!(serde_json::to_value(ObjectId::new(sent)).unwrap(), serde_json::json!(sent));
        }
        assert_eq!(ObjectId::default().to_string(), "");
    }

    #[test]
    fn an_id_that_is_not_a_canonical_uuid_is_kept_as_sent() {
        for sent in [
            "sim-42",
            "",
            // Upper case would not come back as sent.
            "8B4F2E1C-3D5A-4F6B-9C7D-0E1F2A3B4C5D",
            // No hyphens, hyphens elsewhere, a non-hex digit, one character short or long.
            "8b4f2e1c3d5a4f6b9c7d0e1f2a3b4c5d",
            "8b4f2e1c3-d5a-4f6b-9c7d-0e1f2a3b4c5d",
            "8b4f2e1c-3d5a-4f6b-9c7d-0e1f2a3b4c5g",
            "8b4f2e1c-3d5a-4f6b-9c7d-0e1f2a3b4c5",
            "8b4f2e1c-3d5a-4f6b-9c7d-0e1f2a3b4c5d0",
            "8b4f2e1c-3d5a-4f6b-9c7d-0e1f2a3b4cé",
        ] {
            let id = ObjectId::new(sent);
            assert_eq!(id, ObjectId::Other(sent.into()), "{sent}");
            assert_eq!(id.to_string(), sent);
            assert!(matches!(id.text(), Cow::Borrowed(s) if s == sent));
            assert_eq!(id, *sent);
        }
    }
}
