//! PDFs the tests make: written byte by byte where no library would write the file
//! (hostile ones, a scan: numbered objects, a classic cross-reference table), and
//! pages of known text with lopdf, saved as they are or encrypted.

use std::path::Path;

use lopdf::content::{Content, Operation};
use lopdf::{dictionary, Document, Object, Stream};

/// A PDF from numbered object bodies (object `i + 1` is `objects[i]`), with a classic
/// cross-reference table and `/Root 1 0 R`; `trailer_extra` goes into the trailer.
pub fn raw_pdf(objects: &[Vec<u8>], trailer_extra: &str) -> Vec<u8> {
    let mut out = b"%PDF-1.5\n%\xe2\xe3\xcf\xd3\n".to_vec();
    let mut offsets = Vec::with_capacity(objects.len());
    for (i, body) in objects.iter().enumerate() {
        offsets.push(out.len());
        out.extend_from_slice(format!("{} 0 obj\n", i + 1).as_bytes());
        out.extend_from_slice(body);
        out.extend_from_slice(b"\nendobj\n");
    }
    let xref = out.len();
    out.extend_from_slice(
        format!("xref\n0 {}\n0000000000 65535 f \n", objects.len() + 1).as_bytes(),
    );
    for o in offsets {
        out.extend_from_slice(format!("{o:010} 00000 n \n").as_bytes());
    }
    out.extend_from_slice(
        format!(
            "trailer\n<< /Size {} /Root 1 0 R {trailer_extra} >>\nstartxref\n{xref}\n%%EOF\n",
            objects.len() + 1
        )
        .as_bytes(),
    );
    out
}

/// A stream object's body: `dict`'s entries with `/Length`, then `data`.
pub fn stream(dict: &str, data: &[u8]) -> Vec<u8> {
    let mut b = format!("<< {dict} /Length {} >>\nstream\n", data.len()).into_bytes();
    b.extend_from_slice(data);
    b.extend_from_slice(b"\nendstream");
    b
}

/// A PDF with one page per entry of `pages`, each line of it a line of Helvetica text.
pub fn text_pdf(pages: &[&str]) -> Document {
    let mut doc = Document::with_version("1.5");
    let pages_id = doc.new_object_id();
    let font = doc.add_object(dictionary! {
        "Type" => "Font", "Subtype" => "Type1", "BaseFont" => "Helvetica",
    });
    let resources = doc.add_object(dictionary! { "Font" => dictionary! { "F1" => font } });
    let mut kids = Vec::new();
    for text in pages {
        let mut ops = vec![
            Operation::new("BT", vec![]),
            Operation::new("Tf", vec!["F1".into(), 11.into()]),
            Operation::new("TL", vec![14.into()]),
            Operation::new("Td", vec![60.into(), 780.into()]),
        ];
        for line in text.lines() {
            ops.push(Operation::new("Tj", vec![Object::string_literal(line)]));
            ops.push(Operation::new("T*", vec![]));
        }
        ops.push(Operation::new("ET", vec![]));
        let content = Content { operations: ops }.encode().expect("content");
        let content = doc.add_object(Stream::new(dictionary! {}, content));
        let page = doc.add_object(dictionary! {
            "Type" => "Page", "Parent" => pages_id, "Contents" => content,
        });
        kids.push(Object::from(page));
    }
    let count = kids.len() as i64;
    doc.objects.insert(
        pages_id,
        Object::Dictionary(dictionary! {
            "Type" => "Pages", "Kids" => kids, "Count" => count, "Resources" => resources,
            "MediaBox" => vec![0.into(), 0.into(), 595.into(), 842.into()],
        }),
    );
    let catalog = doc.add_object(dictionary! { "Type" => "Catalog", "Pages" => pages_id });
    doc.trailer.set("Root", catalog);
    doc
}

/// `doc` saved, as bytes.
pub fn pdf_bytes(mut doc: Document) -> Vec<u8> {
    let mut out = Vec::new();
    doc.save_to(&mut out).expect("save pdf");
    out
}

/// A [`text_pdf`] of `pages` written to `path`.
pub fn write_pdf(path: &Path, pages: &[String]) {
    let refs: Vec<&str> = pages.iter().map(String::as_str).collect();
    std::fs::write(path, pdf_bytes(text_pdf(&refs))).expect("write pdf");
}

/// A [`text_pdf`] of `pages` pages of 40 sentences about `topic`, written to `path`.
pub fn topic_pdf(path: &Path, topic: &str, pages: usize) {
    let pages: Vec<String> = (1..=pages)
        .map(|p| {
            (0..40)
                .map(|line| {
                    format!(
                        "Page {p} line {line}: {topic} is studied here, sentence {line} of the \
                         {topic} notes."
                    )
                })
                .collect::<Vec<_>>()
                .join("\n")
        })
        .collect();
    write_pdf(path, &pages);
}

/// `doc` encrypted with the user password `secret` (the empty one does not open it),
/// as bytes.
pub fn encrypted(mut doc: Document) -> Vec<u8> {
    doc.trailer.set(
        "ID",
        vec![
            Object::string_literal(b"0123456789abcdef".to_vec()),
            Object::string_literal(b"0123456789abcdef".to_vec()),
        ],
    );
    let version = lopdf::EncryptionVersion::V2 {
        document: &doc,
        owner_password: "owner",
        user_password: "secret",
        key_length: 128,
        permissions: lopdf::Permissions::PRINTABLE,
    };
    let state = lopdf::EncryptionState::try_from(version).expect("encryption state");
    doc.encrypt(&state).expect("encrypt");
    pdf_bytes(doc)
}
