//! The architecture's guard. `docs/architecture.md` writes the layers once, from the bottom: for the
//! crate and for every folder of `src/`, which modules (or files) sit in which layer. This test
//! reads `src/` as text and fails on
//!
//! - an import against that order: a module (or a file of a folder) may name only modules of a
//!   lower layer of the same folder — `crate::`, `super::`, `self::` and child-module paths, in `use`
//!   declarations and in code, followed through re-exports to the file that defines the name;
//! - a module that no layer places, or a layer entry that names no module;
//! - a function in `src/` longer than 100 lines (test code excepted);
//! - a file of `src/` that does not open with a module doc (`//!`) saying what it is for.
//!
//! Each failure names the file, the line and the rule. Test code (`#[cfg(test)]` items and the
//! files they declare) is left out: tests may reach anything they check.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

/// The longest a function in `src/` may be, in lines from `fn` to its closing brace.
const MAX_FUNCTION_LINES: usize = 100;

/// The name under which a folder's `mod.rs` (or the crate's `lib.rs`) is its own node.
const FOLDER_SELF: &str = "mod";

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

// ---------------------------------------------------------------------------------------------
// Reading Rust as text: comments and literals blanked, test code removed.

/// The source with comments, string and character literals replaced by spaces (newlines kept, so
/// offsets and line numbers stay those of the file).
fn blank_comments_and_literals(src: &str) -> String {
    let b = src.as_bytes();
    let mut out = b.to_vec();
    let blank = |out: &mut Vec<u8>, from: usize, to: usize| {
        for c in &mut out[from..to] {
            if *c != b'\n' {
                *c = b' ';
            }
        }
    };
    let is_ident = |c: u8| c.is_ascii_alphanumeric() || c == b'_';
    let mut i = 0;
    while i < b.len() {
        let c = b[i];
        let prev = if i > 0 { b[i - 1] } else { b' ' };
        if c == b'/' && b.get(i + 1) == Some(&b'/') {
            let end = b[i..]
                .iter()
                .position(|&c| c == b'\n')
                .map_or(b.len(), |p| i + p);
            blank(&mut out, i, end);
            i = end;
        } else if c == b'/' && b.get(i + 1) == Some(&b'*') {
            let mut depth = 0;
            let mut j = i;
            while j < b.len() {
                if b[j] == b'/' && b.get(j + 1) == Some(&b'*') {
                    depth += 1;
                    j += 2;
                } else if b[j] == b'*' && b.get(j + 1) == Some(&b'/') {
                    depth -= 1;
                    j += 2;
                    if depth == 0 {
                        break;
                    }
                } else {
                    j += 1;
                }
            }
            blank(&mut out, i, j);
            i = j;
        } else if (c == b'r' || c == b'b' || c == b'c')
            && !is_ident(prev)
            && raw_start(b, i).is_some()
        {
            let (hashes, quote) = raw_start(b, i).unwrap();
            let mut j = quote + 1;
            loop {
                if j >= b.len() {
                    break;
                }
                if b[j] == b'"'
                    && b[j + 1..]
                        .iter()
                        .take(hashes)
                        .filter(|&&h| h == b'#')
                        .count()
                        == hashes
                {
                    j += 1 + hashes;
                    break;
                }
                j += 1;
            }
            blank(
                &mut out,
                quote + 1,
                j.saturating_sub(1 + hashes).max(quote + 1),
            );
            i = j;
        } else if c == b'"' {
            let mut j = i + 1;
            while j < b.len() && b[j] != b'"' {
                j += if b[j] == b'\\' { 2 } else { 1 };
            }
            blank(&mut out, i + 1, j.min(b.len()));
            i = j + 1;
        } else if c == b'\'' && !is_ident(prev) {
            // A character literal ('x', '\n', '\u{..}', '"') or a lifetime/label ('a).
            if b.get(i + 1) == Some(&b'\\') {
                let mut j = i + 2;
                while j < b.len() && b[j] != b'\'' {
                    j += 1;
                }
                blank(&mut out, i + 1, j);
                i = j + 1;
            } else {
                let ch_len = src[i + 1..].chars().next().map_or(1, char::len_utf8);
                if b.get(i + 1 + ch_len) == Some(&b'\'') {
                    blank(&mut out, i + 1, i + 1 + ch_len);
                    i += 2 + ch_len;
                } else {
                    i += 1;
                }
            }
        } else {
            i += 1;
        }
    }
    // Multi-byte characters inside literals were blanked byte by byte; the rest is unchanged.
    String::from_utf8(out).unwrap_or_else(|e| String::from_utf8_lossy(e.as_bytes()).into_owned())
}

/// Where a raw (or byte/C) string starts at `i`: the number of `#` and the opening quote's offset.
fn raw_start(b: &[u8], i: usize) -> Option<(usize, usize)> {
    let mut j = i;
    if b[j] == b'b' || b[j] == b'c' {
        j += 1;
        if b.get(j) == Some(&b'"') {
            return Some((0, j));
        }
    }
    if b.get(j) != Some(&b'r') {
        return None;
    }
    j += 1;
    let mut hashes = 0;
    while b.get(j) == Some(&b'#') {
        hashes += 1;
        j += 1;
    }
    (b.get(j) == Some(&b'"')).then_some((hashes, j))
}

/// The offset just past the bracket that closes the one at `open` (`(`, `[` or `{`).
fn matching(b: &[u8], open: usize) -> usize {
    let (o, c) = match b[open] {
        b'(' => (b'(', b')'),
        b'[' => (b'[', b']'),
        _ => (b'{', b'}'),
    };
    let mut depth = 0;
    for (j, &ch) in b.iter().enumerate().skip(open) {
        if ch == o {
            depth += 1;
        } else if ch == c {
            depth -= 1;
            if depth == 0 {
                return j + 1;
            }
        }
    }
    b.len()
}

/// The offset just past the item that starts at `from`: its `;` or its braced body.
fn item_end(b: &[u8], from: usize) -> usize {
    let mut j = from;
    // Further attributes first.
    loop {
        while j < b.len() && b[j].is_ascii_whitespace() {
            j += 1;
        }
        if b.get(j) == Some(&b'#') && b.get(j + 1) == Some(&b'[') {
            j = matching(b, j + 1);
        } else {
            break;
        }
    }
    while j < b.len() {
        match b[j] {
            b';' => return j + 1,
            b'{' => return matching(b, j),
            b'(' | b'[' => j = matching(b, j),
            _ => j += 1,
        }
    }
    b.len()
}

/// Blanked code with every `#[cfg(test)]` item (or `cfg(all(test, …))`, `cfg(any(test, …))`)
/// removed.
fn without_test_code(code: &str) -> String {
    let b = code.as_bytes();
    let mut out = b.to_vec();
    let mut i = 0;
    while let Some(at) = code[i..].find("#[cfg(") {
        let start = i + at;
        let attr_end = matching(b, start + 1);
        let attr = &code[start..attr_end];
        let names_test = words(attr).any(|w| w == "test");
        if names_test && !attr.contains("not(") {
            let end = item_end(b, attr_end);
            for c in &mut out[start..end] {
                if *c != b'\n' {
                    *c = b' ';
                }
            }
            i = end;
        } else {
            i = attr_end;
        }
    }
    String::from_utf8(out).expect("blanking keeps UTF-8")
}

fn words(text: &str) -> impl Iterator<Item = &str> {
    text.split(|c: char| !(c.is_alphanumeric() || c == '_'))
        .filter(|w| !w.is_empty())
}

fn line_of(code: &str, offset: usize) -> usize {
    code[..offset].bytes().filter(|&c| c == b'\n').count() + 1
}

fn is_ident_byte(c: u8) -> bool {
    c.is_ascii_alphanumeric() || c == b'_'
}

/// The identifier starting at `i`, if any.
fn ident_at(code: &str, i: usize) -> Option<&str> {
    let b = code.as_bytes();
    if i >= b.len() || !(b[i].is_ascii_alphabetic() || b[i] == b'_') {
        return None;
    }
    let end = (i..b.len())
        .find(|&j| !is_ident_byte(b[j]))
        .unwrap_or(b.len());
    Some(&code[i..end])
}

// ---------------------------------------------------------------------------------------------
// The modules of the crate.

/// One file of `src/`, as the crate sees it.
struct File {
    /// `src/config/load.rs`
    rel: String,
    /// `["config", "load"]`; a folder's `mod.rs` is the folder (`["config"]`), `lib.rs` is `[]`.
    module: Vec<String>,
    /// Comments and literals blanked, test code removed.
    code: String,
    /// Child modules declared outside test code (`mod x;`).
    children: Vec<String>,
}

/// Every file of the crate in `<root>/src` reachable from `lib.rs` through `mod` declarations
/// outside test code.
fn crate_files(root: &Path) -> Vec<File> {
    let src = root.join("src");
    let mut files = Vec::new();
    let mut queue = vec![(src.join("lib.rs"), Vec::<String>::new())];
    while let Some((path, module)) = queue.pop() {
        let source =
            std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        let code = without_test_code(&blank_comments_and_literals(&source));
        let children = mod_declarations(&code);
        let dir = match path.file_name().and_then(|n| n.to_str()) {
            Some("lib.rs" | "mod.rs") => path.parent().unwrap().to_path_buf(),
            _ => path.with_extension(""),
        };
        for child in &children {
            let file = dir.join(format!("{child}.rs"));
            let file = if file.exists() {
                file
            } else {
                dir.join(child).join("mod.rs")
            };
            let mut m = module.clone();
            m.push(child.clone());
            queue.push((file, m));
        }
        let rel = path.strip_prefix(root).unwrap().display().to_string();
        files.push(File {
            rel,
            module,
            code,
            children,
        });
    }
    files.sort_by(|a, b| a.rel.cmp(&b.rel));
    files
}

/// `mod x;` declarations (any visibility).
fn mod_declarations(code: &str) -> Vec<String> {
    let mut out = Vec::new();
    let b = code.as_bytes();
    let mut i = 0;
    while let Some(at) = code[i..].find("mod ") {
        let start = i + at;
        i = start + 4;
        if start > 0 && is_ident_byte(b[start - 1]) {
            continue;
        }
        let rest = code[i..].trim_start();
        if let Some(name) = ident_at(rest, 0)
            && rest[name.len()..].trim_start().starts_with(';')
        {
            out.push(name.to_string());
        }
    }
    out
}

// ---------------------------------------------------------------------------------------------
// Paths: `use` trees and paths in code, resolved to the file that defines what they name.

/// One name a `use` declaration binds.
struct UseLeaf {
    /// The path as written, without the bound alias (`super::plan::Strategy`, `crate::config`).
    path: Vec<String>,
    /// The name it binds in the file (`Strategy`, an alias, or `*` for a glob).
    bound: String,
    offset: usize,
    /// Declared `pub`, `pub(crate)`, `pub(super)`: a re-export.
    public: bool,
}

#[derive(Debug, Clone, PartialEq)]
enum Tok {
    Ident(String, usize),
    Sep,
    Open,
    Close,
    Comma,
    Star,
}

fn use_tokens(text: &str, base: usize) -> Vec<Tok> {
    let b = text.as_bytes();
    let mut toks = Vec::new();
    let mut i = 0;
    while i < b.len() {
        let c = b[i];
        if c == b':' && b.get(i + 1) == Some(&b':') {
            toks.push(Tok::Sep);
            i += 2;
        } else if c == b'{' {
            toks.push(Tok::Open);
            i += 1;
        } else if c == b'}' {
            toks.push(Tok::Close);
            i += 1;
        } else if c == b',' {
            toks.push(Tok::Comma);
            i += 1;
        } else if c == b'*' {
            toks.push(Tok::Star);
            i += 1;
        } else if is_ident_byte(c) || c == b'$' {
            let end = (i + 1..b.len())
                .find(|&j| !is_ident_byte(b[j]))
                .unwrap_or(b.len());
            toks.push(Tok::Ident(text[i..end].to_string(), base + i));
            i = end;
        } else {
            i += 1;
        }
    }
    toks
}

/// Parses a use tree at `toks[*at..]` under `prefix`, pushing its leaves.
fn parse_use_tree(
    toks: &[Tok],
    at: &mut usize,
    prefix: &[String],
    public: bool,
    out: &mut Vec<UseLeaf>,
) {
    let mut path = prefix.to_vec();
    let mut last_offset = 0;
    loop {
        match toks.get(*at) {
            Some(Tok::Ident(name, off)) if name == "as" && path.len() > prefix.len() => {
                *at += 1;
                if let Some(Tok::Ident(alias, _)) = toks.get(*at) {
                    *at += 1;
                    out.push(UseLeaf {
                        path,
                        bound: alias.clone(),
                        offset: *off,
                        public,
                    });
                }
                return;
            }
            Some(Tok::Ident(name, off)) => {
                *at += 1;
                last_offset = *off;
                path.push(name.clone());
                if toks.get(*at) == Some(&Tok::Sep) {
                    *at += 1;
                    continue;
                }
                if let Some(Tok::Ident(w, _)) = toks.get(*at)
                    && w == "as"
                {
                    continue;
                }
                let bound = path.last().cloned().unwrap_or_default();
                if bound == "self" {
                    path.pop();
                    let bound = path.last().cloned().unwrap_or_default();
                    out.push(UseLeaf {
                        path,
                        bound,
                        offset: last_offset,
                        public,
                    });
                } else {
                    out.push(UseLeaf {
                        path,
                        bound,
                        offset: last_offset,
                        public,
                    });
                }
                return;
            }
            Some(Tok::Star) => {
                *at += 1;
                out.push(UseLeaf {
                    path,
                    bound: "*".into(),
                    offset: last_offset,
                    public,
                });
                return;
            }
            Some(Tok::Open) => {
                *at += 1;
                loop {
                    match toks.get(*at) {
                        Some(Tok::Close) => {
                            *at += 1;
                            return;
                        }
                        Some(Tok::Comma) => *at += 1,
                        None => return,
                        _ => parse_use_tree(toks, at, &path, public, out),
                    }
                }
            }
            _ => return,
        }
    }
}

/// Every `use` declaration of the code, with the span it covers.
fn use_declarations(code: &str) -> (Vec<UseLeaf>, Vec<(usize, usize)>) {
    let b = code.as_bytes();
    let mut leaves = Vec::new();
    let mut spans = Vec::new();
    let mut i = 0;
    while let Some(at) = code[i..].find("use ") {
        let start = i + at;
        i = start + 4;
        if start > 0 && (is_ident_byte(b[start - 1]) || b[start - 1] == b'$') {
            continue;
        }
        let before = code[..start].trim_end();
        let public = before.ends_with("pub")
            || before.ends_with(')') && {
                let open = before.rfind('(').unwrap_or(0);
                before[..open].trim_end().ends_with("pub")
            };
        let declares = before.is_empty() || before.ends_with([';', '{', '}', ']']) || public;
        if !declares {
            continue;
        }
        let end = code[i..].find(';').map_or(code.len(), |p| i + p);
        let toks = use_tokens(&code[i..end], i);
        let mut at = 0;
        parse_use_tree(&toks, &mut at, &[], public, &mut leaves);
        spans.push((start, end));
        i = end;
    }
    (leaves, spans)
}

/// Paths in code (outside `use` declarations) that start at `crate`, `super`, `self` or a child
/// module: `(path, offset)`.
fn code_paths(file: &File, use_spans: &[(usize, usize)]) -> Vec<(Vec<String>, usize)> {
    let code = &file.code;
    let b = code.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    while i < b.len() {
        if !(b[i].is_ascii_alphabetic() || b[i] == b'_')
            || (i > 0 && (is_ident_byte(b[i - 1]) || b[i - 1] == b':' || b[i - 1] == b'$'))
        {
            i += 1;
            continue;
        }
        let first = ident_at(code, i).unwrap();
        let starts =
            matches!(first, "crate" | "super" | "self") || file.children.iter().any(|c| c == first);
        if !starts || !code[i + first.len()..].starts_with("::") {
            i += first.len();
            continue;
        }
        let start = i;
        let mut path = vec![first.to_string()];
        let mut j = i + first.len();
        while code[j..].starts_with("::") {
            match ident_at(code, j + 2) {
                Some(seg) => {
                    path.push(seg.to_string());
                    j += 2 + seg.len();
                }
                None => break,
            }
        }
        if !use_spans.iter().any(|&(s, e)| start >= s && start < e) {
            out.push((path, start));
        }
        i = j;
    }
    out
}

/// The crate: files by module path, and what each module's `use` declarations bind.
struct Crate {
    files: Vec<File>,
    by_module: HashMap<Vec<String>, usize>,
    /// Per module: bound name → absolute path (crate-relative) of what it names; `None` for an
    /// outside crate.
    binds: HashMap<Vec<String>, HashMap<String, Option<Vec<String>>>>,
}

impl Crate {
    fn read(root: &Path) -> Self {
        let files = crate_files(root);
        let by_module = files
            .iter()
            .enumerate()
            .map(|(i, f)| (f.module.clone(), i))
            .collect();
        let mut krate = Crate {
            files,
            by_module,
            binds: HashMap::new(),
        };
        for f in &krate.files {
            let (leaves, _) = use_declarations(&f.code);
            let mut binds = HashMap::new();
            for leaf in leaves {
                if leaf.bound != "*" {
                    binds.insert(leaf.bound.clone(), krate.absolute(f, &leaf.path));
                }
            }
            krate.binds.insert(f.module.clone(), binds);
        }
        krate
    }

    /// A path as written in `file`, made crate-relative; `None` when it names another crate.
    fn absolute(&self, file: &File, path: &[String]) -> Option<Vec<String>> {
        let first = path.first()?;
        let (mut base, rest) = match first.as_str() {
            "crate" => (Vec::new(), &path[1..]),
            "self" => (file.module.clone(), &path[1..]),
            "super" => {
                let mut base = file.module.clone();
                let mut rest = path;
                while rest.first().is_some_and(|s| s == "super") {
                    base.pop();
                    rest = &rest[1..];
                }
                (base, rest)
            }
            child if file.children.iter().any(|c| c == child) => (file.module.clone(), path),
            _ => return None,
        };
        base.extend(rest.iter().cloned());
        Some(base)
    }

    /// The module (file) that defines what an absolute path names, following `use` bindings.
    fn resolve(&self, path: &[String]) -> Vec<String> {
        let mut path = path.to_vec();
        for _ in 0..16 {
            let module_len = (0..=path.len())
                .rev()
                .find(|&n| self.by_module.contains_key(&path[..n]))
                .unwrap_or(0);
            if let Some(name) = path.get(module_len)
                && let Some(Some(target)) = self
                    .binds
                    .get(&path[..module_len])
                    .and_then(|b| b.get(name))
            {
                let mut next = target.clone();
                next.extend(path[module_len + 1..].iter().cloned());
                if next != path {
                    path = next;
                    continue;
                }
            }
            return path[..module_len].to_vec();
        }
        path
    }
}

/// One import of a module by a file: where, what was written, and the module it reaches.
struct Import {
    file: usize,
    line: usize,
    written: String,
    target: Vec<String>,
}

fn imports(krate: &Crate) -> Vec<Import> {
    let mut out = Vec::new();
    for (fi, f) in krate.files.iter().enumerate() {
        let (leaves, spans) = use_declarations(&f.code);
        let is_folder = f.rel.ends_with("mod.rs") || f.rel.ends_with("lib.rs");
        // Code outside `use` declarations, to tell a re-export that the file itself uses.
        let mut body = f.code.clone().into_bytes();
        for &(s, e) in &spans {
            for c in &mut body[s..e] {
                *c = b' ';
            }
        }
        let body = String::from_utf8(body).unwrap();
        let used: BTreeSet<&str> = words(&body).collect();
        for leaf in &leaves {
            let Some(abs) = krate.absolute(f, &leaf.path) else {
                continue;
            };
            let target = krate.resolve(&abs);
            // A folder's face re-exporting its own children is not a use by its code.
            let facade = is_folder
                && leaf.public
                && target.starts_with(&f.module)
                && target.len() > f.module.len()
                && !used.contains(leaf.bound.as_str());
            if !facade {
                out.push(Import {
                    file: fi,
                    line: line_of(&f.code, leaf.offset),
                    written: leaf.path.join("::"),
                    target,
                });
            }
        }
        for (path, offset) in code_paths(f, &spans) {
            let Some(abs) = krate.absolute(f, &path) else {
                continue;
            };
            out.push(Import {
                file: fi,
                line: line_of(&f.code, offset),
                written: path.join("::"),
                target: krate.resolve(&abs),
            });
        }
    }
    out
}

/// Where an import crosses between two nodes of one folder: `(folder, from, to)`; `None` within a
/// file.
fn crossing(from: &[String], to: &[String]) -> Option<(Vec<String>, String, String)> {
    let k = from.iter().zip(to).take_while(|(a, b)| a == b).count();
    if k == from.len() && k == to.len() {
        return None;
    }
    let node = |m: &[String]| m.get(k).cloned().unwrap_or_else(|| FOLDER_SELF.to_string());
    Some((from[..k].to_vec(), node(from), node(to)))
}

// ---------------------------------------------------------------------------------------------
// The layers, as docs/architecture.md writes them.

/// Per folder (`crate`, `config`, `run::sinks`): each node's layer, bottom = 0.
type Layers = BTreeMap<String, BTreeMap<String, (usize, usize)>>;

fn folder_name(folder: &[String]) -> String {
    if folder.is_empty() {
        "crate".into()
    } else {
        folder.join("::")
    }
}

/// Reads the fenced block ```` ```layers ```` of `docs/architecture.md`: one entry per folder,
/// `folder: a b < c < d e`, bottom layer first, continued on indented lines. Returns the layers
/// with the line of each entry.
fn read_layers(doc: &str) -> Result<Layers, String> {
    let start = doc
        .find("```layers\n")
        .ok_or("docs/architecture.md has no ```layers block")?;
    let first_line = line_of(doc, start) + 1;
    let body = &doc[start + "```layers\n".len()..];
    let body = &body[..body
        .find("```")
        .ok_or("the ```layers block is not closed")?];
    let mut entries: Vec<(usize, String)> = Vec::new();
    for (n, line) in body.lines().enumerate() {
        let text = line.split('#').next().unwrap_or("");
        if text.trim().is_empty() {
            continue;
        }
        if line.starts_with(char::is_whitespace) {
            let last = entries.last_mut().ok_or(format!(
                "docs/architecture.md:{}: continuation before an entry",
                first_line + n
            ))?;
            last.1.push(' ');
            last.1.push_str(text.trim());
        } else {
            entries.push((first_line + n, text.trim().to_string()));
        }
    }
    let mut layers = Layers::new();
    for (line, entry) in entries {
        let (folder, order) = entry
            .split_once(':')
            .filter(|(f, _)| !f.contains(' '))
            .ok_or(format!(
                "docs/architecture.md:{line}: expected `folder: a b < c …`"
            ))?;
        let mut nodes = BTreeMap::new();
        for (layer, group) in order.split('<').enumerate() {
            for name in group.split_whitespace() {
                if nodes.insert(name.to_string(), (layer, line)).is_some() {
                    return Err(format!(
                        "docs/architecture.md:{line}: `{name}` placed twice"
                    ));
                }
            }
        }
        let folder = folder.trim().replace('/', "::");
        if layers.insert(folder.clone(), nodes).is_some() {
            return Err(format!(
                "docs/architecture.md:{line}: `{folder}` has two entries"
            ));
        }
    }
    Ok(layers)
}

fn layers(root: &Path) -> Layers {
    let doc = std::fs::read_to_string(root.join("docs/architecture.md")).unwrap();
    read_layers(&doc).unwrap_or_else(|e| panic!("{e}"))
}

/// The nodes of each folder: its child modules, and `mod` where its own file has code beyond
/// `mod` declarations and re-exports.
fn folders(krate: &Crate) -> BTreeMap<String, BTreeSet<String>> {
    let mut out: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for f in &krate.files {
        if !f.children.is_empty() {
            let nodes = out.entry(folder_name(&f.module)).or_default();
            nodes.extend(f.children.iter().cloned());
        }
    }
    out
}

/// Every import against the layers: `file:line: rule` lines.
fn layer_violations(krate: &Crate, layers: &Layers) -> Vec<String> {
    let mut out = BTreeSet::new();
    for import in imports(krate) {
        let from = &krate.files[import.file];
        let Some((folder, a, b)) = crossing(&from.module, &import.target) else {
            continue;
        };
        let name = folder_name(&folder);
        let Some(order) = layers.get(&name) else {
            out.insert(format!(
                "{}:{}: folder `{name}` has no entry in the layers of docs/architecture.md",
                from.rel, import.line
            ));
            continue;
        };
        let (Some(&(la, _)), Some(&(lb, _))) = (order.get(&a), order.get(&b)) else {
            let missing = if order.contains_key(&a) { &b } else { &a };
            out.insert(format!(
                "{}:{}: `{missing}` is in no layer of `{name}` in docs/architecture.md",
                from.rel, import.line
            ));
            continue;
        };
        if la <= lb {
            let target = if import.target.is_empty() {
                "crate".into()
            } else {
                import.target.join("::")
            };
            let rule = if la == lb {
                format!(
                    "`{a}` and `{b}` share layer {la} of `{name}`, and modules of one layer do not import each other"
                )
            } else {
                format!(
                    "`{a}` (layer {la} of `{name}`) may import only from layers below its own; `{b}` is layer {lb}"
                )
            };
            out.insert(format!(
                "{}:{}: `{}` reaches {target}: {rule} (docs/architecture.md)",
                from.rel, import.line, import.written
            ));
        }
    }
    out.into_iter().collect()
}

/// Layer entries that place no module, and modules no entry places.
fn placement_violations(krate: &Crate, layers: &Layers) -> Vec<String> {
    let mut out = Vec::new();
    let actual = folders(krate);
    for (folder, nodes) in &actual {
        let Some(order) = layers.get(folder) else {
            out.push(format!(
                "docs/architecture.md: folder `{folder}` has no entry in the ```layers block"
            ));
            continue;
        };
        for node in nodes {
            if !order.contains_key(node) {
                out.push(format!(
                    "docs/architecture.md: `{folder}` places no layer for its module `{node}`"
                ));
            }
        }
        for (node, (_, line)) in order {
            if node != FOLDER_SELF && !nodes.contains(node) {
                out.push(format!(
                    "docs/architecture.md:{line}: `{folder}` has no module `{node}`"
                ));
            }
        }
    }
    for (folder, order) in layers {
        if !actual.contains_key(folder) {
            let line = order.values().next().map_or(0, |v| v.1);
            out.push(format!(
                "docs/architecture.md:{line}: `{folder}` is not a folder of src/"
            ));
        }
    }
    out
}

// ---------------------------------------------------------------------------------------------
// Functions.

/// Functions of the code: `(name, first line, lines)`.
fn functions(code: &str) -> Vec<(String, usize, usize)> {
    let b = code.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    while let Some(at) = code[i..].find("fn ") {
        let start = i + at;
        i = start + 3;
        if start > 0 && is_ident_byte(b[start - 1]) {
            continue;
        }
        let rest_at = start + 3 + (code[start + 3..].len() - code[start + 3..].trim_start().len());
        let Some(name) = ident_at(code, rest_at) else {
            continue;
        };
        // The body: the first `{` at bracket depth 0, unless a `;` ends a declaration first.
        let mut j = rest_at + name.len();
        let mut body = None;
        while j < b.len() {
            match b[j] {
                b';' => break,
                b'{' => {
                    body = Some(j);
                    break;
                }
                b'(' | b'[' => j = matching(b, j),
                _ => j += 1,
            }
        }
        let Some(open) = body else { continue };
        let close = matching(b, open);
        let first = line_of(code, start);
        let last = line_of(code, close.saturating_sub(1));
        out.push((name.to_string(), first, last - first + 1));
    }
    out
}

fn long_functions(krate: &Crate) -> Vec<String> {
    let mut out = Vec::new();
    for f in &krate.files {
        for (name, line, lines) in functions(&f.code) {
            if lines > MAX_FUNCTION_LINES {
                out.push(format!(
                    "{}:{line}: fn {name} is {lines} lines; a function in src/ is at most {MAX_FUNCTION_LINES} — split it into named steps",
                    f.rel
                ));
            }
        }
    }
    out
}

/// Files of `src/` (every `.rs` file, declared or not) that do not open with a module doc.
fn undocumented_files(root: &Path) -> Vec<String> {
    let mut out = Vec::new();
    for entry in walk(&root.join("src")) {
        if entry.extension().is_some_and(|e| e == "rs") {
            let text = std::fs::read_to_string(&entry).unwrap();
            if !text.trim_start().starts_with("//!") {
                let rel = entry.strip_prefix(root).unwrap().display().to_string();
                out.push(format!(
                    "{rel}:1: the file does not open with a module doc (`//!`) saying what it is for"
                ));
            }
        }
    }
    out
}

fn walk(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            out.extend(walk(&path));
        } else {
            out.push(path);
        }
    }
    out.sort();
    out
}

fn report(what: &str, found: &[String]) -> String {
    let mut text = format!("{} {what}:\n", found.len());
    for line in found {
        let _ = writeln!(text, "  {line}");
    }
    text
}

// ---------------------------------------------------------------------------------------------
// The checks.

/// Every import against the layers of `<root>/docs/architecture.md`, and every misplaced module.
fn import_findings(root: &Path) -> Vec<String> {
    let krate = Crate::read(root);
    let layers = layers(root);
    let mut found = placement_violations(&krate, &layers);
    found.extend(layer_violations(&krate, &layers));
    found
}

#[test]
fn imports_follow_the_layers() {
    let found = import_findings(&root());
    assert!(
        found.is_empty(),
        "{}",
        report("imports against docs/architecture.md's layers", &found)
    );
}

#[test]
fn no_function_is_over_100_lines() {
    let found = long_functions(&Crate::read(&root()));
    assert!(
        found.is_empty(),
        "{}",
        report("functions over 100 lines", &found)
    );
}

#[test]
fn every_file_opens_with_what_it_is_for() {
    let found = undocumented_files(&root());
    assert!(
        found.is_empty(),
        "{}",
        report("files without a module doc", &found)
    );
}

/// Prints every crossing import (`QA_LOOP_ARCH_EDGES=1 cargo test --test architecture -- --nocapture`),
/// to see the structure when placing a new module.
#[test]
fn edges_on_request() {
    if std::env::var_os("QA_LOOP_ARCH_EDGES").is_none() {
        return;
    }
    let krate = Crate::read(&root());
    let mut edges: BTreeMap<(String, String, String), Vec<String>> = BTreeMap::new();
    for import in imports(&krate) {
        let from = &krate.files[import.file];
        if let Some((folder, a, b)) = crossing(&from.module, &import.target) {
            edges
                .entry((folder_name(&folder), a, b))
                .or_default()
                .push(format!("{}:{} {}", from.rel, import.line, import.written));
        }
    }
    for ((folder, a, b), at) in edges {
        println!("{folder}: {a} -> {b}   ({})", at.join(", "));
    }
}

// ---------------------------------------------------------------------------------------------
// The guard itself, on a small crate written here: each rule fails when broken.

/// A crate in a temporary directory: `files` under `src/`, `layers` as the docs' block.
fn scratch(files: &[(&str, &str)], layers: &str) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    for (path, text) in files {
        let path = dir.path().join("src").join(path);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, text).unwrap();
    }
    std::fs::create_dir_all(dir.path().join("docs")).unwrap();
    std::fs::write(
        dir.path().join("docs/architecture.md"),
        format!("# Architecture\n\n```layers\n{layers}```\n"),
    )
    .unwrap();
    dir
}

const SCRATCH_LAYERS: &str = "crate: text < store < app\nstore: disk < mod\n";

/// `text` at the bottom, `store` (a folder: `disk.rs` under its `mod.rs`) above it, `app` on top.
fn scratch_files(
    text_rs: &'static str,
    disk_rs: &'static str,
) -> Vec<(&'static str, &'static str)> {
    vec![
        (
            "lib.rs",
            "//! A crate.\npub mod app;\npub mod store;\npub mod text;\n",
        ),
        ("text.rs", text_rs),
        (
            "app.rs",
            "//! The app.\nuse crate::store::Store;\npub fn run(_: Store) {}\n",
        ),
        (
            "store/mod.rs",
            "//! Storage.\nmod disk;\npub use disk::Disk;\n/// A store.\npub struct Store(pub Disk);\n",
        ),
        ("store/disk.rs", disk_rs),
    ]
}

const TEXT_RS: &str = "//! Text.\n/// Clips.\npub fn clip(s: &str) -> &str {\n    s\n}\n";
const DISK_RS: &str = "//! Disk.\nuse crate::text::clip;\n/// A disk.\npub struct Disk;\npub fn name() -> &'static str {\n    clip(\"d\")\n}\n";

#[test]
fn the_guard_passes_a_layered_crate() {
    let dir = scratch(&scratch_files(TEXT_RS, DISK_RS), SCRATCH_LAYERS);
    assert_eq!(import_findings(dir.path()), Vec::<String>::new());
    assert_eq!(
        long_functions(&Crate::read(dir.path())),
        Vec::<String>::new()
    );
    assert_eq!(undocumented_files(dir.path()), Vec::<String>::new());
}

#[test]
fn the_guard_names_a_back_edge_between_modules_with_its_line() {
    // `text` (the bottom) reaching up to `app`, in code rather than a `use`.
    let text = "//! Text.\n/// Clips.\npub fn clip(s: &str) -> &str {\n    let _ = crate::app::run;\n    s\n}\n";
    let dir = scratch(&scratch_files(text, DISK_RS), SCRATCH_LAYERS);
    let found = import_findings(dir.path());
    assert_eq!(found.len(), 1, "{found:?}");
    assert!(
        found[0].starts_with("src/text.rs:4: `crate::app::run` reaches app: `text` (layer 0 of `crate`) may import only from layers below its own; `app` is layer 2"),
        "{found:?}"
    );
}

#[test]
fn the_guard_names_a_back_edge_into_the_folders_own_mod_rs() {
    // `disk` (below `mod` in `store`) naming `Store` of its folder's own `mod.rs` through
    // `super::`, and a sibling's name through the folder's re-export: the first is a back edge.
    let disk =
        "//! Disk.\nuse super::Store;\n/// A disk.\npub struct Disk;\npub fn of(_: &Store) {}\n";
    let dir = scratch(&scratch_files(TEXT_RS, disk), SCRATCH_LAYERS);
    let found = import_findings(dir.path());
    assert_eq!(found.len(), 1, "{found:?}");
    assert!(
        found[0].starts_with("src/store/disk.rs:2: `super::Store` reaches store: `disk` (layer 0 of `store`) may import only from layers below its own; `mod` is layer 1"),
        "{found:?}"
    );
    // Placed in one layer, the two would be a cycle: refused as such.
    let dir = scratch(
        &scratch_files(TEXT_RS, disk),
        "crate: text < store < app\nstore: disk mod\n",
    );
    let found = import_findings(dir.path());
    assert!(
        found
            .iter()
            .any(|f| f.contains("`disk` and `mod` share layer 0 of `store`")),
        "{found:?}"
    );
}

#[test]
fn the_guard_follows_a_folder_re_export_to_the_sibling_that_defines_the_name() {
    let files = [
        ("lib.rs", "//! A crate.\npub mod store;\n"),
        (
            "store/mod.rs",
            "//! Storage.\nmod cache;\nmod disk;\npub use disk::Disk;\n",
        ),
        ("store/disk.rs", "//! Disk.\npub struct Disk;\n"),
        (
            "store/cache.rs",
            "//! Cache.\nuse super::Disk;\npub fn keep(_: Disk) {}\n",
        ),
    ];
    let dir = scratch(&files, "crate: store\nstore: disk < cache < mod\n");
    assert_eq!(import_findings(dir.path()), Vec::<String>::new());
    let dir = scratch(&files, "crate: store\nstore: cache < disk < mod\n");
    let found = import_findings(dir.path());
    assert_eq!(found.len(), 1, "{found:?}");
    assert!(
        found[0].starts_with("src/store/cache.rs:2: `super::Disk` reaches store::disk: `cache` (layer 0 of `store`) may import only from layers below its own; `disk` is layer 1"),
        "{found:?}"
    );
}

#[test]
fn the_guard_names_an_unplaced_module_and_a_stale_entry() {
    let dir = scratch(
        &scratch_files(TEXT_RS, DISK_RS),
        "crate: text < store app gone\nstore: disk < mod\n",
    );
    let found = import_findings(dir.path());
    assert!(
        found
            .iter()
            .any(|f| f.contains("`crate` has no module `gone`")),
        "{found:?}"
    );
    assert!(
        found
            .iter()
            .any(|f| f.contains("`app` and `store` share layer 1 of `crate`")),
        "{found:?}"
    );
    let dir = scratch(
        &scratch_files(TEXT_RS, DISK_RS),
        "crate: text < app\nstore: disk < mod\n",
    );
    let found = import_findings(dir.path());
    assert!(
        found
            .iter()
            .any(|f| f.contains("`crate` places no layer for its module `store`")),
        "{found:?}"
    );
}

#[test]
fn the_guard_ignores_test_code_comments_and_strings() {
    let text = "//! Text.\n/// Clips; see crate::app::run.\npub fn clip(s: &str) -> &str {\n    let _ = \"crate::app::run\";\n    s\n}\n\n#[cfg(test)]\nmod tests {\n    use crate::app::run;\n}\n";
    let dir = scratch(&scratch_files(text, DISK_RS), SCRATCH_LAYERS);
    assert_eq!(import_findings(dir.path()), Vec::<String>::new());
}

#[test]
fn the_guard_names_a_function_of_101_lines_and_passes_one_of_100() {
    fn with_body(lines: usize) -> &'static str {
        // `fn` line + body + closing brace = `lines`.
        let body: String = (0..lines - 2)
            .map(|i| format!("    let _x{i} = {i};\n"))
            .collect();
        let text = format!("//! Text.\npub fn long() {{\n{body}}}\n");
        Box::leak(text.into_boxed_str())
    }
    let dir = scratch(&scratch_files(with_body(100), DISK_RS), SCRATCH_LAYERS);
    assert_eq!(
        long_functions(&Crate::read(dir.path())),
        Vec::<String>::new()
    );
    let dir = scratch(&scratch_files(with_body(101), DISK_RS), SCRATCH_LAYERS);
    assert_eq!(
        long_functions(&Crate::read(dir.path())),
        vec!["src/text.rs:2: fn long is 101 lines; a function in src/ is at most 100 — split it into named steps".to_string()]
    );
}

#[test]
fn the_guard_names_a_file_without_its_module_doc() {
    let dir = scratch(
        &scratch_files("pub fn clip() {}\n", DISK_RS),
        SCRATCH_LAYERS,
    );
    assert_eq!(
        undocumented_files(dir.path()),
        vec![
            "src/text.rs:1: the file does not open with a module doc (`//!`) saying what it is for"
                .to_string()
        ]
    );
}
