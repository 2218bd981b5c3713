//! A page's resource dictionaries, found by walking up its page tree without
//! recursion: the nearest `/Resources` written into the page or an ancestor, then every
//! `/Resources` the page and its ancestors refer to (lopdf's `get_page_resources`, in
//! the same order, minus its recursion and its depth limit of 256, which lost every
//! font of a page nested deeper and with them its text). A cycle of `/Parent` links
//! ends the walk; the depth is bounded by the document's objects, each seen once.

use std::collections::HashSet;

use lopdf::{Dictionary, Document, Object, ObjectId};

/// The resource dictionaries of page `page_id`, innermost first.
pub(crate) fn page_resources(doc: &Document, page_id: ObjectId) -> Vec<&Dictionary> {
    let Ok(page) = doc.get_dictionary(page_id) else {
        return Vec::new();
    };
    let mut inline: Option<&Dictionary> = None;
    let mut ids: Vec<ObjectId> = Vec::new();
    let mut seen: HashSet<ObjectId> = HashSet::from([page_id]);
    let mut node = page;
    loop {
        match node.get(b"Resources") {
            Ok(Object::Reference(id)) => ids.push(*id),
            // An ancestor's own dictionary counts only when nothing nearer has one.
            Ok(Object::Dictionary(dict)) if inline.is_none() && ids.is_empty() => {
                inline = Some(dict);
            }
            _ => {}
        }
        let Ok(parent) = node.get(b"Parent").and_then(Object::as_reference) else {
            break;
        };
        if !seen.insert(parent) {
            break;
        }
        let Ok(next) = doc.get_dictionary(parent) else {
            break;
        };
        node = next;
    }
    inline
        .into_iter()
        .chain(ids.iter().filter_map(|id| doc.get_dictionary(*id).ok()))
        .collect()
}
