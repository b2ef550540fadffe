//! Loading Kubernetes manifests for `plan`: files or directories (recursive; `*.yaml`, `*.yml`,
//! `*.json`, sorted by path), multi-document YAML, and `kind: List`.

use std::path::{Path, PathBuf};

use serde::de::DeserializeOwned;
use serde_json::Value;

use super::options::Inputs;

/// A manifest that could not be read; names the file and, where relevant, the document (0-based).
#[derive(Debug, thiserror::Error)]
pub enum ManifestError {
    #[error("{path}: {source}")]
    Io { path: PathBuf, source: std::io::Error },
    #[error("{path}: not valid YAML: {message}")]
    Parse { path: PathBuf, message: String },
    #[error("{path}: document {index}: {kind}: {message}")]
    Object { path: PathBuf, index: usize, kind: String, message: String },
}

fn collect(path: &Path, out: &mut Vec<PathBuf>) -> Result<(), ManifestError> {
    let io = |source| ManifestError::Io { path: path.to_path_buf(), source };
    if path.is_dir() {
        let mut entries: Vec<PathBuf> =
            std::fs::read_dir(path).map_err(io)?.map(|e| e.map(|e| e.path())).collect::<Result<_, _>>().map_err(io)?;
        entries.sort();
        for e in entries {
            if e.is_dir()
                || e.extension().and_then(|x| x.to_str()).is_some_and(|x| matches!(x, "yaml" | "yml" | "json"))
            {
                collect(&e, out)?;
            }
        }
    } else {
        out.push(path.to_path_buf());
    }
    Ok(())
}

/// The manifest files `paths` name: files as given, directories' YAML/JSON files, sorted.
pub fn manifest_files(paths: &[PathBuf]) -> Result<Vec<PathBuf>, ManifestError> {
    let mut files = Vec::new();
    for p in paths {
        collect(p, &mut files)?;
    }
    Ok(files)
}

/// Read every object from `paths` into [`Inputs`]. Kinds the translation does not read are
/// skipped with a note in `Inputs::notes`.
pub fn load_manifests(paths: &[PathBuf]) -> Result<Inputs, ManifestError> {
    inputs_of(&read_manifests(paths)?)
}

/// The text of every manifest file `paths` name (see [`manifest_files`]), read once: what both
/// the Ingress translation ([`inputs_of`]) and the Gateway plan parse.
pub fn read_manifests(paths: &[PathBuf]) -> Result<Vec<(PathBuf, String)>, ManifestError> {
    manifest_files(paths)?
        .into_iter()
        .map(|f| match std::fs::read_to_string(&f) {
            Ok(text) => Ok((f, text)),
            Err(source) => Err(ManifestError::Io { path: f, source }),
        })
        .collect()
}

/// Every object of the files' `texts` (see [`read_manifests`]) in [`Inputs`].
pub fn inputs_of(texts: &[(PathBuf, String)]) -> Result<Inputs, ManifestError> {
    let mut inputs = Inputs::default();
    for (f, text) in texts {
        load_str(text, f, &mut inputs)?;
    }
    Ok(inputs)
}

/// Parse one file's text (YAML or JSON) into `inputs`; `path` is only used in errors and notes.
pub fn load_str(text: &str, path: &Path, inputs: &mut Inputs) -> Result<(), ManifestError> {
    let docs: Vec<Value> = serde_saphyr::from_multiple(text)
        .map_err(|e| ManifestError::Parse { path: path.to_path_buf(), message: e.to_string() })?;
    for (index, doc) in docs.into_iter().enumerate() {
        add(doc, path, index, inputs)?;
    }
    Ok(())
}

fn parse<T: DeserializeOwned>(v: Value, path: &Path, index: usize, kind: &str) -> Result<T, ManifestError> {
    serde_json::from_value(v).map_err(|e| ManifestError::Object {
        path: path.to_path_buf(),
        index,
        kind: kind.into(),
        message: e.to_string(),
    })
}

fn add(mut doc: Value, path: &Path, index: usize, inputs: &mut Inputs) -> Result<(), ManifestError> {
    if doc.is_null() {
        return Ok(());
    }
    let kind = doc.get("kind").and_then(Value::as_str).unwrap_or("").to_string();
    match kind.as_str() {
        "List" => {
            let items = doc.get_mut("items").map(Value::take).unwrap_or(Value::Null);
            for item in items.as_array().cloned().unwrap_or_default() {
                add(item, path, index, inputs)?;
            }
        }
        "Ingress" => {
            // The API server requires pathType; a hand-written manifest may lack it. Keep the
            // path with an empty pathType so the translation can warn instead of failing here.
            if let Some(rules) = doc.pointer_mut("/spec/rules").and_then(Value::as_array_mut) {
                for r in rules {
                    if let Some(paths) = r.pointer_mut("/http/paths").and_then(Value::as_array_mut) {
                        for p in paths {
                            if let Some(o) = p.as_object_mut() {
                                o.entry("pathType").or_insert(Value::String(String::new()));
                            }
                        }
                    }
                }
            }
            inputs.ingresses.push(parse(doc, path, index, &kind)?);
        }
        "IngressClass" => inputs.ingress_classes.push(parse(doc, path, index, &kind)?),
        "Service" => inputs.services.push(parse(doc, path, index, &kind)?),
        "EndpointSlice" => inputs.endpoint_slices.push(parse(doc, path, index, &kind)?),
        "Endpoints" => inputs.endpoints.push(parse(doc, path, index, &kind)?),
        "Node" => inputs.nodes.push(parse(doc, path, index, &kind)?),
        "Secret" => {
            // `stringData` is what the API server would merge into `data`; do the same here so
            // that hand-written TLS Secrets (PEM text) work with `plan`.
            let mut secret: k8s_openapi::api::core::v1::Secret = parse(doc, path, index, &kind)?;
            for (k, v) in secret.string_data.take().unwrap_or_default() {
                secret.data.get_or_insert_default().insert(k, k8s_openapi::ByteString(v.into_bytes()));
            }
            inputs.secrets.push(secret);
        }
        "" => {
            return Err(ManifestError::Object {
                path: path.to_path_buf(),
                index,
                kind: "(none)".into(),
                message: "document has no kind".into(),
            });
        }
        // Read by the Gateway translation (`gateway::plan`), from the same files.
        _ if doc
            .get("apiVersion")
            .and_then(Value::as_str)
            .is_some_and(|v| v.starts_with("gateway.networking.k8s.io/")) => {}
        other => {
            let name = doc.pointer("/metadata/name").and_then(Value::as_str).unwrap_or("");
            inputs.notes.push(format!(
                "{}: document {index}: {other} {name} ignored (not read by the translation)",
                path.display()
            ));
        }
    }
    Ok(())
}
