//! Issue #46: a bundle is hostile. Every file of every fixture is replaced by a link out of the
//! bundle (to a copy of itself in a folder beside it), and `check`, `devices` and `bundle
//! --from-root` read the bundle: nothing outside it may be opened. The folder outside is
//! watched with inotify (IN_OPEN, IN_ACCESS): an open through any path fabcheck reads, by any
//! reader, is an event, so the test needs no list of the paths fabcheck reads, only the fixtures.
//! The answer may be anything but a hang or a crash (a link out is refused, named, and the check
//! that needed it is `skip` or names the file).

use super::{fabcheck, fixtures_dir};
use nix::sys::inotify::{AddWatchFlags, InitFlags, Inotify};
use std::path::{Path, PathBuf};

fn dirs_under(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap().flatten() {
        if entry.file_type().unwrap().is_dir() {
            out.push(entry.path());
            dirs_under(&entry.path(), out);
        }
    }
}

fn files_under(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap().flatten() {
        let path = entry.path();
        let kind = entry.file_type().unwrap();
        if kind.is_dir() {
            files_under(&path, out);
        } else if kind.is_file() {
            out.push(path);
        }
    }
}

/// A copy of `fixture` whose every top-level folder (`class`, `bus`, `tools`, `module`...) is a
/// link to itself moved to `outside`.
fn folders_linked_out(fixture: &Path, root: &Path, outside: &Path) -> usize {
    let status = std::process::Command::new("cp").arg("-a").arg(fixture).arg(root).status().unwrap();
    assert!(status.success(), "cp -a {}", fixture.display());
    let mut n = 0;
    for entry in std::fs::read_dir(root).unwrap().flatten() {
        if entry.file_type().unwrap().is_dir() {
            let target = outside.join(entry.file_name());
            std::fs::rename(entry.path(), &target).unwrap();
            std::os::unix::fs::symlink(&target, entry.path()).unwrap();
            n += 1;
        }
    }
    n
}

/// A copy of `fixture` whose every regular file is a link to its bytes in `outside`.
fn linked_out(fixture: &Path, root: &Path, outside: &Path) -> usize {
    let status = std::process::Command::new("cp").arg("-a").arg(fixture).arg(root).status().unwrap();
    assert!(status.success(), "cp -a {}", fixture.display());
    let mut files = Vec::new();
    files_under(root, &mut files);
    for (i, file) in files.iter().enumerate() {
        let target = outside.join(i.to_string());
        std::fs::rename(file, &target).unwrap();
        std::os::unix::fs::symlink(&target, file).unwrap();
    }
    files.len()
}

#[test]
fn no_read_of_a_bundle_follows_a_link_out_of_it() {
    let scratch = std::env::temp_dir().join(format!("fabcheck-bundle-links-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&scratch);
    let mut fixtures: Vec<PathBuf> =
        std::fs::read_dir(fixtures_dir()).unwrap().flatten().map(|e| e.path()).filter(|p| p.join("class/infiniband").is_dir()).collect();
    fixtures.sort();
    assert!(fixtures.len() >= 40, "fixtures: {}", fixtures.len());
    let mut planted = 0;
    for fixture in &fixtures {
        let name = fixture.file_name().unwrap().to_str().unwrap();
        let (root, outside) = (scratch.join(name).join("bundle"), scratch.join(name).join("outside"));
        std::fs::create_dir_all(&outside).unwrap();
        planted += linked_out(fixture, &root, &outside);
        let inotify = Inotify::init(InitFlags::IN_NONBLOCK | InitFlags::IN_CLOEXEC).unwrap();
        inotify.add_watch(&outside, AddWatchFlags::IN_OPEN | AddWatchFlags::IN_ACCESS).unwrap();
        // The same with the bundle's folders linked out: each folder outside is watched (its
        // files' opens are its events; a listing of it is an open of it, seen by its parent).
        let (folders, folders_outside) = (scratch.join(name).join("folders"), scratch.join(name).join("folders-outside"));
        std::fs::create_dir_all(&folders_outside).unwrap();
        planted += folders_linked_out(fixture, &folders, &folders_outside);
        inotify.add_watch(&folders_outside, AddWatchFlags::IN_OPEN | AddWatchFlags::IN_ACCESS).unwrap();
        let mut dirs = Vec::new();
        dirs_under(&folders_outside, &mut dirs);
        for dir in &dirs {
            inotify.add_watch(dir, AddWatchFlags::IN_OPEN | AddWatchFlags::IN_ACCESS).unwrap();
        }
        let folders_text = folders.to_str().unwrap();
        // What the set-up itself opened (the listing above) is not fabcheck's.
        let _ = inotify.read_events();
        let root_text = root.to_str().unwrap();
        let copy = scratch.join(name).join("copy");
        let copy_text = copy.to_str().unwrap();
        for args in [
            vec!["check", "--sysfs-root", root_text, "--json"],
            vec!["devices", "--sysfs-root", root_text, "--json"],
            vec!["check", "--sysfs-root", root_text, "--format", "prom"],
            vec!["bundle", copy_text, "--from-root", root_text],
            vec!["check", "--sysfs-root", folders_text, "--json"],
            vec!["devices", "--sysfs-root", folders_text, "--json"],
        ] {
            let started = std::time::Instant::now();
            let out = fabcheck(&args);
            assert!(matches!(out.status.code(), Some(0..=2)), "{name}: {args:?}: {:?}\n{}", out.status, String::from_utf8_lossy(&out.stderr));
            assert!(started.elapsed().as_secs() < 60, "{name}: {args:?} must not hang on links");
            let events = match inotify.read_events() {
                Ok(events) => events,
                Err(nix::errno::Errno::EAGAIN) => Vec::new(),
                Err(e) => panic!("inotify: {e}"),
            };
            let opened: Vec<String> =
                events.iter().map(|e| e.name.as_ref().map_or("(a folder itself)".into(), |n| n.to_string_lossy().into_owned())).collect();
            assert!(opened.is_empty(), "{name}: {args:?} opened {} file(s) outside the bundle through its links: {opened:?}", opened.len());
        }
    }
    assert!(planted > 1000, "links planted: {planted}");
    std::fs::remove_dir_all(&scratch).ok();
}
