use super::*;

fn scratch(tag: &str) -> std::path::PathBuf {
    let dir = std::env::temp_dir().join(format!("fabcheck-bundle-{tag}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

fn manifest(host: &str) -> String {
    serde_json::json!({"schema": SCHEMA, "host": host, "time": "2026-12-02T04:00:00Z", "fabcheck_version": "0.4.0", "kernel": "6.1.0-rxe"})
        .to_string()
}

#[test]
fn the_origin_is_the_manifests_and_none_without_one() {
    let dir = scratch("origin");
    assert_eq!(origin(&dir).unwrap(), None);
    std::fs::write(dir.join(MANIFEST), manifest("node07.cluster")).unwrap();
    let o = origin(&dir).unwrap().unwrap();
    assert_eq!((o.host.as_str(), o.kernel.as_deref()), ("node07.cluster", Some("6.1.0-rxe")));
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn a_manifest_that_is_not_one_is_refused_never_printed() {
    let dir = scratch("bad");
    for bad in ["node\n07", "\u{1b}[2Jx", "-rf", ""] {
        std::fs::write(dir.join(MANIFEST), manifest(bad)).unwrap();
        let err = origin(&dir).unwrap_err();
        assert!(err.error.contains("not one"), "{err:?}");
        assert!(!err.error.contains('\u{1b}'));
    }
    std::fs::write(dir.join(MANIFEST), "{\"schema\":\"other.v1\"}").unwrap();
    assert!(origin(&dir).is_err());
    std::fs::remove_dir_all(&dir).ok();
}
