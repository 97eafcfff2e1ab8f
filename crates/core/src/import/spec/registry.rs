//! The built-in profiles (the files of `crates/core/profiles/`, compiled in) and the
//! profile files of a folder.

use std::path::Path;
use std::sync::OnceLock;

use super::*;
use crate::error::Result;

pub(super) static BUILTIN_FILES: &[(&str, &str)] = &[
    ("autodl.toml", include_str!("../../../profiles/autodl.toml")),
    ("aliyun.toml", include_str!("../../../profiles/aliyun.toml")),
    ("focus.toml", include_str!("../../../profiles/focus.toml")),
    ("aws-cur.toml", include_str!("../../../profiles/aws-cur.toml")),
    ("azure.toml", include_str!("../../../profiles/azure.toml")),
    ("oci.toml", include_str!("../../../profiles/oci.toml")),
    ("gcp.toml", include_str!("../../../profiles/gcp.toml")),
    ("tencent.toml", include_str!("../../../profiles/tencent.toml")),
    ("tencent-resource.toml", include_str!("../../../profiles/tencent-resource.toml")),
    ("ctyun.toml", include_str!("../../../profiles/ctyun.toml")),
    ("gpushare.toml", include_str!("../../../profiles/gpushare.toml")),
];

/// The built-in profiles, compiled once from the files in `crates/core/profiles/`.
pub fn builtin() -> &'static [&'static Profile] {
    static BUILTIN: OnceLock<Vec<&'static Profile>> = OnceLock::new();
    BUILTIN.get_or_init(|| {
        BUILTIN_FILES
            .iter()
            .map(|(file, text)| {
                let profile: &'static Profile = Profile::parse(text, Path::new(file))
                    .unwrap_or_else(|e| panic!("built-in profile {file} is broken: {e}"));
                profile
            })
            .collect()
    })
}

/// The profile files (`*.toml`) of a folder, in name order; none when it does not exist.
pub fn load_dir(dir: &Path) -> Result<Vec<&'static Profile>> {
    let entries = match std::fs::read_dir(dir) {
        Ok(entries) => entries,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => return Err(crate::Error::io(dir, e)),
    };
    let mut paths = Vec::new();
    for entry in entries {
        let path = entry.map_err(|e| crate::Error::io(dir, e))?.path();
        if path.extension().is_some_and(|x| x == "toml") {
            paths.push(path);
        }
    }
    paths.sort();
    paths.iter().map(|p| Profile::load(p)).collect()
}

/// The built-in profiles with `extra` added; an extra profile with a built-in's name
/// replaces it.
pub fn with_extra(extra: &[&'static Profile]) -> Vec<&'static Profile> {
    let mut all: Vec<&'static Profile> =
        builtin().iter().copied().filter(|b| !extra.iter().any(|e| e.name() == b.name())).collect();
    for &e in extra {
        all.push(e);
    }
    all
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::import::profile_by_name;

    fn first_instance(profile: &str, texts: &[(&str, &str)]) -> Option<String> {
        let p = profile_by_name(profile).unwrap();
        p.instance.iter().find_map(|(_, col, re)| {
            let key = p.columns[*col].key;
            let text = texts.iter().find(|(k, _)| *k == key)?.1;
            re.captures(text).and_then(|m| m.get(1)).map(|m| m.as_str().to_owned())
        })
    }

    #[test]
    fn autodl_finds_the_instance_in_notes_in_both_colon_styles() {
        let id = |note| first_instance("autodl", &[("note", note)]);
        assert_eq!(id("容器实例ID：a1b2c3d4e5").as_deref(), Some("a1b2c3d4e5"));
        assert_eq!(id("容器实例ID: 6f2e-91ab 数据盘").as_deref(), Some("6f2e-91ab"));
        assert_eq!(id("余额充值"), None);
        assert_eq!(id("容器实例ID："), None);
    }

    #[test]
    fn aliyun_finds_ecs_ids_in_config_text_but_not_inside_words() {
        let id =
            |config| first_instance("aliyun", &[("resource_id", "d-bp1x"), ("config", config)]);
        assert_eq!(id("绑定实例:i-bp1a2b3c4d").as_deref(), Some("i-bp1a2b3c4d"));
        assert_eq!(id("instance=i-uf6x9k2").as_deref(), Some("i-uf6x9k2"));
        assert_eq!(id("multi-az; ti-abcdef"), None);
        assert_eq!(id("i-ab"), None);
        assert_eq!(
            first_instance("aliyun", &[("resource_id", "i-bp1own")]).as_deref(),
            Some("i-bp1own")
        );
    }

    #[test]
    fn every_profile_file_is_registered_and_every_registered_one_exists() {
        let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("profiles");
        let mut files: Vec<String> = std::fs::read_dir(&dir)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .filter(|name| name.ends_with(".toml"))
            .collect();
        files.sort();
        let mut registered: Vec<String> =
            BUILTIN_FILES.iter().map(|(name, _)| (*name).to_owned()).collect();
        registered.sort();
        assert_eq!(files, registered, "crates/core/profiles/ and BUILTIN_FILES differ");
        for (name, text) in BUILTIN_FILES {
            assert_eq!(std::fs::read_to_string(dir.join(name)).unwrap(), *text, "{name}");
        }
        assert_eq!(builtin().len(), BUILTIN_FILES.len());
    }

    #[test]
    fn a_broken_profile_file_is_refused_with_what_is_wrong() {
        let path = Path::new("mine.toml");
        let base = include_str!("../../../profiles/autodl.toml");
        let cases = [
            (base.replace("zone = \"Asia/Shanghai\"", "zone = \"Mars/Olympus\""), "unknown zone"),
            (
                base.replace("column = \"note\"\nregex", "column = \"memo\"\nregex"),
                "`memo` is used but no [[columns]] entry has that key",
            ),
            (base.replace("([A-Za-z0-9_-]+)", "[A-Za-z0-9_-]+"), "has no capture group"),
            (base.replace("name = \"autodl\"", "nom = \"autodl\""), "unknown field `nom`"),
        ];
        for (text, want) in cases {
            let err = Profile::parse(&text, path).err().map(|e| e.to_string()).unwrap_or_default();
            assert!(err.starts_with("profile mine.toml: ") && err.contains(want), "{err}");
        }
    }
}
