//! A watched folder's sync as a pure function: the PDFs on disk (path, size,
//! modification time) against the documents the index holds under the folder →
//! the actions that bring the index in step. A file whose size and time match is
//! unchanged without being read; only the others are hashed (sha256), and a new file
//! only when a document has its size (a rename keeps the bytes, and so does a copy).
//! A missing document whose bytes turn up under another path is moved in place, not
//! indexed again; the rest of the missing are removed. A new file with the bytes of a
//! document that is there is a copy, which the index keeps once: nothing to do (not
//! queued again at every sync). Running it again after its actions
//! were applied gives nothing to do: a sync is idempotent.

use std::collections::{HashMap, HashSet};

use crate::store::KnownFile;
use crate::Result;

/// A PDF found on disk.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OnDisk {
    pub path: String,
    pub bytes: u64,
    /// Nanoseconds since the epoch.
    pub mtime: i64,
}

/// One change to the index.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Action {
    /// A new file: queue it.
    Index { path: String, bytes: u64 },
    /// A file whose bytes changed: queue it (the new document replaces the old).
    Reindex { path: String, bytes: u64 },
    /// The document's file is now at `path` (renamed or moved, same bytes).
    Move { id: i64, path: String, mtime: i64 },
    /// The file holds the indexed bytes still (touched, copied back): note its time.
    Stamp { id: i64, bytes: u64, mtime: i64 },
    /// The file is gone: the document leaves the index.
    Remove { id: i64 },
}

impl Action {
    /// Removals first (a path a document leaves may be the one another moves to),
    /// then moves, then the rest.
    fn rank(&self) -> u8 {
        match self {
            Action::Remove { .. } => 0,
            Action::Move { .. } => 1,
            Action::Stamp { .. } => 2,
            Action::Index { .. } | Action::Reindex { .. } => 3,
        }
    }
}

/// The actions of a sync, in the order to apply them, and what needed none.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Diff {
    pub actions: Vec<Action>,
    /// Files whose size and time matched, or whose bytes were unchanged.
    pub unchanged: usize,
    /// Files read to hash them.
    pub hashed: usize,
    /// New files with the bytes of a document that is there (copies: kept once).
    pub copies: usize,
}

/// Compare `disk` with `known`. `protected`: folders that could not be listed, whose
/// documents are neither removed nor moved. `hash` reads a file's sha256 (`Ok(None)`:
/// it vanished or cannot be read now: left for the next sync; `Err`: stop, e.g.
/// cancelled).
pub fn diff(
    disk: &[OnDisk],
    known: &[KnownFile],
    protected: &[String],
    hash: &mut dyn FnMut(&str) -> Result<Option<String>>,
) -> Result<Diff> {
    let by_path: HashMap<&str, &KnownFile> = known.iter().map(|k| (k.path.as_str(), k)).collect();
    let on_disk: HashSet<&str> = disk.iter().map(|d| d.path.as_str()).collect();
    let shielded = |p: &str| {
        protected.iter().any(|dir| {
            p.strip_prefix(dir.as_str())
                .is_some_and(|r| r.starts_with('/'))
        })
    };
    // Documents whose files are gone, by content: a file with their bytes elsewhere
    // is the same document renamed.
    let mut missing: HashMap<&str, Vec<&KnownFile>> = HashMap::new();
    let mut sizes: HashSet<u64> = HashSet::new();
    let mut present: HashSet<&str> = HashSet::new();
    for k in known {
        sizes.insert(k.bytes);
        if !on_disk.contains(k.path.as_str()) && !shielded(&k.path) {
            missing.entry(k.hash.as_str()).or_default().push(k);
        } else {
            present.insert(k.hash.as_str());
        }
    }
    let mut out = Diff::default();
    let mut moved: HashSet<i64> = HashSet::new();
    let mut hashed = |path: &str, out: &mut Diff| -> Result<Option<String>> {
        out.hashed += 1;
        hash(path)
    };
    let mut claim = |h: &str| -> Option<i64> {
        let ks = missing.get_mut(h)?;
        let k = ks.pop()?;
        Some(k.id)
    };
    for d in disk {
        match by_path.get(d.path.as_str()) {
            Some(k) if k.bytes == d.bytes && k.mtime == Some(d.mtime) => out.unchanged += 1,
            Some(k) => {
                let Some(h) = hashed(&d.path, &mut out)? else {
                    continue;
                };
                if h == k.hash {
                    out.unchanged += 1;
                    out.actions.push(Action::Stamp {
                        id: k.id,
                        bytes: d.bytes,
                        mtime: d.mtime,
                    });
                } else if let Some(id) = claim(&h) {
                    // Another document's file was moved over this one.
                    moved.insert(id);
                    out.actions.push(Action::Remove { id: k.id });
                    out.actions.push(Action::Move {
                        id,
                        path: d.path.clone(),
                        mtime: d.mtime,
                    });
                } else {
                    out.actions.push(Action::Reindex {
                        path: d.path.clone(),
                        bytes: d.bytes,
                    });
                }
            }
            None => {
                let h = if sizes.contains(&d.bytes) {
                    match hashed(&d.path, &mut out)? {
                        Some(h) => Some(h),
                        None => continue,
                    }
                } else {
                    None
                };
                match h.as_deref().and_then(&mut claim) {
                    None if h.as_deref().is_some_and(|h| present.contains(h)) => {
                        out.copies += 1;
                    }
                    Some(id) => {
                        moved.insert(id);
                        out.actions.push(Action::Move {
                            id,
                            path: d.path.clone(),
                            mtime: d.mtime,
                        });
                    }
                    None => out.actions.push(Action::Index {
                        path: d.path.clone(),
                        bytes: d.bytes,
                    }),
                }
            }
        }
    }
    for k in known {
        if !on_disk.contains(k.path.as_str()) && !shielded(&k.path) && !moved.contains(&k.id) {
            out.actions.push(Action::Remove { id: k.id });
        }
    }
    out.actions.sort_by_key(Action::rank);
    Ok(out)
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn disk(path: &str, bytes: u64, mtime: i64) -> OnDisk {
        OnDisk {
            path: path.into(),
            bytes,
            mtime,
        }
    }

    fn known(id: i64, path: &str, hash: &str, bytes: u64, mtime: Option<i64>) -> KnownFile {
        KnownFile {
            id,
            path: path.into(),
            hash: hash.into(),
            bytes,
            mtime,
        }
    }

    /// Run the diff with the hashes of `contents` (path → hash), counting reads.
    fn run(d: &[OnDisk], k: &[KnownFile], contents: &[(&str, &str)]) -> (Diff, Vec<String>) {
        let mut read = Vec::new();
        let diff = diff(d, k, &[], &mut |p| {
            read.push(p.to_string());
            Ok(contents
                .iter()
                .find(|(q, _)| *q == p)
                .map(|(_, h)| h.to_string()))
        })
        .unwrap();
        (diff, read)
    }

    #[test]
    fn unchanged_files_are_not_read() {
        let d = [disk("/f/a.pdf", 10, 1), disk("/f/b.pdf", 20, 2)];
        let k = [
            known(1, "/f/a.pdf", "ha", 10, Some(1)),
            known(2, "/f/b.pdf", "hb", 20, Some(2)),
        ];
        let (diff, read) = run(&d, &k, &[]);
        assert_eq!(diff.actions, []);
        assert_eq!((diff.unchanged, diff.hashed), (2, 0));
        assert!(read.is_empty());
    }

    #[test]
    fn new_files_are_queued_without_reading_when_nothing_is_missing() {
        let (diff, read) = run(&[disk("/f/n.pdf", 5, 1)], &[], &[]);
        assert_eq!(
            diff.actions,
            [Action::Index {
                path: "/f/n.pdf".into(),
                bytes: 5
            }]
        );
        assert!(read.is_empty());
    }

    #[test]
    fn a_changed_time_with_the_same_bytes_is_stamped_and_new_bytes_reindexed() {
        let d = [disk("/f/a.pdf", 10, 9), disk("/f/b.pdf", 21, 9)];
        let k = [
            known(1, "/f/a.pdf", "ha", 10, Some(1)),
            known(2, "/f/b.pdf", "hb", 20, None),
        ];
        let (diff, read) = run(&d, &k, &[("/f/a.pdf", "ha"), ("/f/b.pdf", "hb2")]);
        assert_eq!(
            diff.actions,
            [
                Action::Stamp {
                    id: 1,
                    bytes: 10,
                    mtime: 9
                },
                Action::Reindex {
                    path: "/f/b.pdf".into(),
                    bytes: 21
                }
            ]
        );
        assert_eq!((diff.unchanged, read.len()), (1, 2));
    }

    #[test]
    fn a_rename_moves_the_document_and_a_deletion_removes_it() {
        let d = [
            disk("/f/sub/renamed.pdf", 10, 1),
            disk("/f/other.pdf", 99, 1),
        ];
        let k = [
            known(1, "/f/a.pdf", "ha", 10, Some(1)),
            known(2, "/f/gone.pdf", "hg", 30, Some(1)),
        ];
        let contents = [("/f/sub/renamed.pdf", "ha"), ("/f/other.pdf", "ho")];
        let (diff, read) = run(&d, &k, &contents);
        assert_eq!(
            diff.actions,
            [
                Action::Remove { id: 2 },
                Action::Move {
                    id: 1,
                    path: "/f/sub/renamed.pdf".into(),
                    mtime: 1
                },
                Action::Index {
                    path: "/f/other.pdf".into(),
                    bytes: 99
                },
            ]
        );
        // Only the file of a missing document's size was read.
        assert_eq!(read, ["/f/sub/renamed.pdf"]);
    }

    #[test]
    fn a_file_moved_over_another_replaces_it_in_place() {
        // b.pdf was moved onto a.pdf: a's document goes, b's takes its path.
        let d = [disk("/f/a.pdf", 20, 5)];
        let k = [
            known(1, "/f/a.pdf", "ha", 10, Some(1)),
            known(2, "/f/b.pdf", "hb", 20, Some(2)),
        ];
        let (diff, _) = run(&d, &k, &[("/f/a.pdf", "hb")]);
        assert_eq!(
            diff.actions,
            [
                Action::Remove { id: 1 },
                Action::Move {
                    id: 2,
                    path: "/f/a.pdf".into(),
                    mtime: 5
                }
            ]
        );
    }

    #[test]
    fn a_copy_of_a_document_that_is_there_is_left_alone() {
        let d = [disk("/f/a.pdf", 10, 1), disk("/f/copy.pdf", 10, 2)];
        let k = [known(1, "/f/a.pdf", "ha", 10, Some(1))];
        let (diff, read) = run(&d, &k, &[("/f/copy.pdf", "ha")]);
        assert_eq!((diff.actions.len(), diff.copies, diff.unchanged), (0, 1, 1));
        assert_eq!(read, ["/f/copy.pdf"]);
    }

    #[test]
    fn two_copies_of_a_missing_file_move_it_once_and_queue_the_other() {
        let d = [disk("/f/c1.pdf", 10, 1), disk("/f/c2.pdf", 10, 1)];
        let k = [known(1, "/f/a.pdf", "ha", 10, Some(1))];
        let (diff, _) = run(&d, &k, &[("/f/c1.pdf", "ha"), ("/f/c2.pdf", "ha")]);
        assert_eq!(
            diff.actions,
            [
                Action::Move {
                    id: 1,
                    path: "/f/c1.pdf".into(),
                    mtime: 1
                },
                Action::Index {
                    path: "/f/c2.pdf".into(),
                    bytes: 10
                }
            ]
        );
    }

    #[test]
    fn unreadable_files_wait_and_unlisted_folders_keep_their_documents() {
        let d = [disk("/f/a.pdf", 11, 2)];
        let k = [
            known(1, "/f/a.pdf", "ha", 10, Some(1)),
            known(2, "/f/locked/b.pdf", "hb", 10, Some(1)),
            known(3, "/f/lockedx.pdf", "hx", 10, Some(1)),
        ];
        let mut no_read = |_: &str| -> Result<Option<String>> { Ok(None) };
        let diff = diff(&d, &k, &["/f/locked".to_string()], &mut no_read).unwrap();
        // a.pdf could not be read: nothing yet; b.pdf's folder was not listed: kept;
        // lockedx.pdf is not in that folder: removed.
        assert_eq!(diff.actions, [Action::Remove { id: 3 }]);
    }

    #[test]
    fn applying_the_actions_leaves_nothing_to_do() {
        let d = [disk("/f/a2.pdf", 10, 3), disk("/f/b.pdf", 20, 4)];
        let k = [known(1, "/f/a.pdf", "ha", 10, Some(1))];
        let contents = [("/f/a2.pdf", "ha"), ("/f/b.pdf", "hb")];
        let (first, _) = run(&d, &k, &contents);
        // Apply: the move, and b.pdf indexed (as the pipeline records it).
        let after = [
            known(1, "/f/a2.pdf", "ha", 10, Some(3)),
            known(2, "/f/b.pdf", "hb", 20, Some(4)),
        ];
        assert_eq!(first.actions.len(), 2);
        let (again, read) = run(&d, &after, &contents);
        assert_eq!((again.actions.len(), again.unchanged), (0, 2));
        assert!(read.is_empty());
    }

    #[test]
    fn cancelling_stops_the_diff() {
        let d = [disk("/f/a.pdf", 11, 2)];
        let k = [known(1, "/f/a.pdf", "ha", 10, Some(1))];
        let mut cancelled = |_: &str| -> Result<Option<String>> { Err(crate::Error::Cancelled) };
        assert!(matches!(
            diff(&d, &k, &[], &mut cancelled),
            Err(crate::Error::Cancelled)
        ));
    }
}
