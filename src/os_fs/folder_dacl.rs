//! Windows: our folders private to the user, as unix's 0700, and a folder that is not refused.
//!
//! On unix a folder of ours is made 0700 (`chmod` fails on a folder someone else owns), and a
//! client refuses a socket whose folder belongs to another uid or is writable by group or others.
//! Windows has no modes: who may do what is the folder's owner and its DACL, and a folder
//! inherits its parent's grants unless its DACL is *protected*. So, on Windows:
//! - a folder we create or take (the data folder, `AGENT_TRAY_HOME`, the runtime and journal
//!   folders) must already be owned by this user (an existing folder owned by anyone else is
//!   refused, never taken over), then gets a protected DACL granting full control to this user
//!   and to SYSTEM, inherited by everything made inside, and is read back and checked: no other
//!   SID may have any access. SYSTEM stays because it is the system itself (the profile folders
//!   grant it too; backup, indexing and the virus scanner run as it, and it holds privileges that
//!   pass any DACL anyway), as root stays able to enter a 0700 folder on unix. Administrators,
//!   whom a folder under the profile otherwise inherits, lose their grant as group and others do
//!   under 0700;
//! - a client refuses the control channel's folder when it is owned by another SID, has no DACL
//!   at all (a NULL DACL lets everyone in), or grants write access to any SID but this user's and
//!   SYSTEM's: the check unix makes with `mode & 0o022`.
//!
//! The rules are one pure function of the owner and the access rules ([`check`]), tested on
//! every OS with built descriptors; the Windows calls only read and write them.
//!
//! The DACL is written with `SetFileSecurityW` (owner, DACL, `PROTECTED_DACL_SECURITY_INFORMATION`
//! and a descriptor whose DACL is marked protected), not `SetNamedSecurityInfoW`: Wine 8's
//! `SetNamedSecurityInfoW` ignores the protection and merges the parent's inheritable grants back
//! in, so the folder would stay open to whoever the parent lets in; `SetFileSecurityW` applies
//! the descriptor as given on Windows and under Wine alike. Under Wine the owner read back is
//! always this user and the DACL is derived from the unix mode (SYSTEM and this user, plus
//! Everyone when "other" has bits), which is what the tests there see.

/// SYSTEM (the local system account).
pub const SYSTEM_SID: &str = "S-1-5-18";

/// The access bits that let a SID change a folder or what is in it: write data, append, write
/// extended attributes, delete a child, write attributes, delete, write the DACL, take
/// ownership, and the generic `GENERIC_WRITE` and `GENERIC_ALL`.
pub const WRITE_ACCESS: u32 =
    0x0002 | 0x0004 | 0x0010 | 0x0040 | 0x0100 | 0x1_0000 | 0x4_0000 | 0x8_0000 | 0x5000_0000;

/// One access rule of a DACL.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Ace {
    /// Grants `mask` to `sid` (an inherit-only rule grants it on what is made inside: counted
    /// the same).
    Allow { sid: String, mask: u32 },
    /// Takes access away: never a reason to refuse.
    Deny,
    /// A rule of another kind (conditional, object-specific), by its type number: not read, so
    /// treated as granting everything to someone else.
    Other(u8),
}

/// What a folder's security descriptor says.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FolderSecurity {
    /// The owner's SID (`S-1-…`), `None` when the descriptor names none.
    pub owner: Option<String>,
    /// The DACL's rules; `None` is a NULL DACL, which grants everyone everything.
    pub dacl: Option<Vec<Ace>>,
}

/// What others may have of a folder for it to be accepted.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Rule {
    /// Only the owner is checked: an existing folder before we rewrite its DACL.
    OwnedByMe,
    /// Owned by this user; nobody but this user and SYSTEM may write (the client's check).
    NoOtherWriter,
    /// Owned by this user; nobody but this user and SYSTEM has any access (a folder of ours
    /// after its DACL was written).
    Private,
}

/// Whether `security` passes `rule` for the user `me`; the error is a sentence saying why not.
pub fn check(me: &str, security: &FolderSecurity, rule: Rule) -> Result<(), String> {
    match &security.owner {
        None => return Err("its security descriptor names no owner".into()),
        Some(owner) if !owner.eq_ignore_ascii_case(me) => {
            return Err(format!("it belongs to {owner}, not to you ({me})"))
        }
        Some(_) => {}
    }
    if rule == Rule::OwnedByMe {
        return Ok(());
    }
    let Some(aces) = &security.dacl else {
        return Err("it has no DACL at all, which lets everyone in".into());
    };
    let trusted = |sid: &str| sid.eq_ignore_ascii_case(me) || sid == SYSTEM_SID;
    for ace in aces {
        match ace {
            Ace::Deny => {}
            Ace::Other(kind) => {
                return Err(format!(
                    "its DACL holds an access rule of a kind not checked here (type {kind})"
                ))
            }
            Ace::Allow { sid, mask } if trusted(sid) || *mask == 0 => {}
            Ace::Allow { sid, mask } => {
                if mask & WRITE_ACCESS != 0 {
                    return Err(format!(
                        "its DACL lets {sid} write to it (access {mask:#x})"
                    ));
                }
                if rule == Rule::Private {
                    return Err(format!("its DACL lets {sid} read it (access {mask:#x})"));
                }
            }
        }
    }
    Ok(())
}

#[cfg(windows)]
pub use self::windows::{make_private, read, write};

#[cfg(windows)]
mod windows {
    use super::{check, Ace, FolderSecurity, Rule};
    use crate::os_fs::windows_security::{descriptor_from_sddl, sid_text, this_user_sid};
    use std::io;
    use std::path::Path;
    use windows_sys::Win32::Foundation::LocalFree;
    use windows_sys::Win32::Security::Authorization::{GetNamedSecurityInfoW, SE_FILE_OBJECT};
    use windows_sys::Win32::Security::{
        GetAce, SetFileSecurityW, ACCESS_ALLOWED_ACE, ACE_HEADER, ACL, DACL_SECURITY_INFORMATION,
        OWNER_SECURITY_INFORMATION, PROTECTED_DACL_SECURITY_INFORMATION, PSECURITY_DESCRIPTOR,
        PSID,
    };

    /// ACE types (winnt.h): the plain allow, and the four that deny.
    const ACCESS_ALLOWED: u8 = 0;
    const DENY_TYPES: [u8; 4] = [1, 6, 10, 12];

    fn wide(path: &Path) -> Vec<u16> {
        use std::os::windows::ffi::OsStrExt;
        path.as_os_str()
            .encode_wide()
            .chain(std::iter::once(0))
            .collect()
    }

    /// A descriptor allocated by the system, freed on drop.
    struct Local(PSECURITY_DESCRIPTOR);
    impl Drop for Local {
        fn drop(&mut self) {
            // SAFETY: allocated with LocalAlloc by the call that filled it, freed once.
            unsafe { LocalFree(self.0) };
        }
    }

    /// The owner and DACL of the file or folder at `path`.
    pub fn read(path: &Path) -> io::Result<FolderSecurity> {
        let name = wide(path);
        let mut owner: PSID = std::ptr::null_mut();
        let mut dacl: *mut ACL = std::ptr::null_mut();
        let mut descriptor: PSECURITY_DESCRIPTOR = std::ptr::null_mut();
        // SAFETY: a NUL-terminated path; the call allocates `descriptor` (freed by `Local`) and
        // points `owner` and `dacl` into it.
        let code = unsafe {
            GetNamedSecurityInfoW(
                name.as_ptr(),
                SE_FILE_OBJECT,
                OWNER_SECURITY_INFORMATION | DACL_SECURITY_INFORMATION,
                &mut owner,
                std::ptr::null_mut(),
                &mut dacl,
                std::ptr::null_mut(),
                &mut descriptor,
            )
        };
        if code != 0 {
            return Err(io::Error::from_raw_os_error(code as i32));
        }
        let _descriptor = Local(descriptor);
        let owner = if owner.is_null() {
            None
        } else {
            // SAFETY: `owner` points into the descriptor, alive in this scope.
            Some(unsafe { sid_text(owner) }?)
        };
        if dacl.is_null() {
            return Ok(FolderSecurity { owner, dacl: None });
        }
        // SAFETY: `dacl` points at a valid ACL inside the descriptor.
        let count = unsafe { (*dacl).AceCount };
        let mut aces = Vec::with_capacity(count as usize);
        for index in 0..count {
            let mut ace: *mut core::ffi::c_void = std::ptr::null_mut();
            // SAFETY: an index below the ACL's count; `ace` points into the ACL.
            if unsafe { GetAce(dacl, index as u32, &mut ace) } == 0 {
                return Err(io::Error::last_os_error());
            }
            // SAFETY: every ACE starts with its header.
            let kind = unsafe { (*(ace as *const ACE_HEADER)).AceType };
            aces.push(if kind == ACCESS_ALLOWED {
                // SAFETY: an ACCESS_ALLOWED_ACE, its SID starting at `SidStart`.
                let allowed = ace as *const ACCESS_ALLOWED_ACE;
                let mask = unsafe { (*allowed).Mask };
                // SAFETY: as above; the SID lies inside the ACE.
                let sid = unsafe { sid_text(std::ptr::addr_of!((*allowed).SidStart) as PSID) }?;
                Ace::Allow { sid, mask }
            } else if DENY_TYPES.contains(&kind) {
                Ace::Deny
            } else {
                Ace::Other(kind)
            });
        }
        Ok(FolderSecurity {
            owner,
            dacl: Some(aces),
        })
    }

    /// Makes the folder `path` private to this user (see the module comment): refused when it
    /// `existed` and is someone else's; given this user as owner and a protected DACL for this
    /// user and SYSTEM; then read back and checked, so a system that accepts the call and keeps
    /// something else is caught, not trusted.
    pub fn make_private(path: &Path, existed: bool) -> io::Result<()> {
        let me = this_user_sid()?;
        let refused = |reason: String| {
            io::Error::new(
                io::ErrorKind::PermissionDenied,
                format!("{reason} (Agent Tray's folders must be yours and private: set AGENT_TRAY_HOME to a folder of your own)"),
            )
        };
        if existed {
            check(&me, &read(path)?, Rule::OwnedByMe).map_err(refused)?;
        }
        // The owner is named too: a folder an elevated process just made is owned by the
        // Administrators group, and would be refused by this very user's next run.
        write(
            path,
            &format!("O:{me}D:P(A;OICI;FA;;;{me})(A;OICI;FA;;;SY)"),
        )?;
        check(&me, &read(path)?, Rule::Private).map_err(refused)
    }

    /// Writes the owner (when `sddl` names one) and the DACL of `sddl` on `path`, the DACL
    /// protected from inheritance (see the module comment for why `SetFileSecurityW`).
    pub fn write(path: &Path, sddl: &str) -> io::Result<()> {
        let descriptor = Local(descriptor_from_sddl(sddl)?);
        let owner = if sddl.starts_with("O:") {
            OWNER_SECURITY_INFORMATION
        } else {
            0
        };
        let name = wide(path);
        // SAFETY: a NUL-terminated path and a valid descriptor, alive for the call.
        if unsafe {
            SetFileSecurityW(
                name.as_ptr(),
                owner | DACL_SECURITY_INFORMATION | PROTECTED_DACL_SECURITY_INFORMATION,
                descriptor.0,
            )
        } == 0
        {
            return Err(io::Error::last_os_error());
        }
        Ok(())
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    const ME: &str = "S-1-5-21-1-2-3-1001";
    const BOB: &str = "S-1-5-21-1-2-3-1002";
    const ADMINISTRATORS: &str = "S-1-5-32-544";
    const EVERYONE: &str = "S-1-1-0";
    /// Full control of a file or folder (`FILE_ALL_ACCESS`).
    const FULL: u32 = 0x1f_01ff;
    /// Read and list (`FILE_GENERIC_READ | FILE_GENERIC_EXECUTE`).
    const READ: u32 = 0x12_00a9;

    fn allow(sid: &str, mask: u32) -> Ace {
        Ace::Allow {
            sid: sid.into(),
            mask,
        }
    }

    fn folder(owner: &str, aces: Vec<Ace>) -> FolderSecurity {
        FolderSecurity {
            owner: Some(owner.into()),
            dacl: Some(aces),
        }
    }

    const ALL_RULES: [Rule; 3] = [Rule::OwnedByMe, Rule::NoOtherWriter, Rule::Private];

    #[test]
    fn the_dacl_we_write_passes_every_rule() {
        let ours = folder(ME, vec![allow(ME, FULL), allow(SYSTEM_SID, FULL)]);
        for rule in ALL_RULES {
            assert_eq!(check(ME, &ours, rule), Ok(()), "{rule:?}");
        }
        // SIDs are compared as Windows does, without regard to case.
        assert_eq!(check(&ME.to_lowercase(), &ours, Rule::Private), Ok(()));
    }

    #[test]
    fn a_folder_owned_by_someone_else_is_refused_by_every_rule() {
        for owner in [BOB, ADMINISTRATORS] {
            let theirs = folder(owner, vec![allow(ME, FULL)]);
            for rule in ALL_RULES {
                let why = check(ME, &theirs, rule).unwrap_err();
                assert!(why.contains(owner) && why.contains("not to you"), "{why}");
            }
        }
        let no_owner = FolderSecurity {
            owner: None,
            dacl: Some(vec![allow(ME, FULL)]),
        };
        assert!(check(ME, &no_owner, Rule::OwnedByMe).is_err());
    }

    #[test]
    fn a_null_dacl_lets_everyone_in_and_is_refused() {
        let open = FolderSecurity {
            owner: Some(ME.into()),
            dacl: None,
        };
        for rule in [Rule::NoOtherWriter, Rule::Private] {
            let why = check(ME, &open, rule).unwrap_err();
            assert!(why.contains("no DACL"), "{why}");
        }
        // Before its DACL is rewritten, only the owner matters: the rewrite closes it.
        assert_eq!(check(ME, &open, Rule::OwnedByMe), Ok(()));
    }

    #[test]
    fn another_writer_is_refused_and_another_reader_only_where_the_folder_must_be_private() {
        for writer in [
            allow(EVERYONE, FULL),
            allow(BOB, 0x0002),              // add a file
            allow(ADMINISTRATORS, 0x4_0000), // rewrite the DACL
            allow(EVERYONE, 0x1000_0000),    // GENERIC_ALL
            allow(BOB, 0x0040),              // delete a child
        ] {
            let wide_open = folder(ME, vec![allow(ME, FULL), writer.clone()]);
            for rule in [Rule::NoOtherWriter, Rule::Private] {
                let why = check(ME, &wide_open, rule).unwrap_err();
                assert!(why.contains("write"), "{writer:?} {rule:?}: {why}");
            }
        }
        // What Wine derives from a 0755 folder: Everyone may read and list.
        let readable = folder(
            ME,
            vec![
                allow(SYSTEM_SID, FULL),
                allow(ME, FULL),
                allow(EVERYONE, READ),
            ],
        );
        assert_eq!(check(ME, &readable, Rule::NoOtherWriter), Ok(()));
        let why = check(ME, &readable, Rule::Private).unwrap_err();
        assert!(why.contains(EVERYONE) && why.contains("read"), "{why}");
    }

    #[test]
    fn deny_rules_and_empty_grants_never_refuse_and_unread_kinds_always_do() {
        let denied = folder(
            ME,
            vec![Ace::Deny, allow(ME, FULL), allow(EVERYONE, 0)], // Wine's 0711: a grant of nothing
        );
        assert_eq!(check(ME, &denied, Rule::Private), Ok(()));
        let conditional = folder(ME, vec![allow(ME, FULL), Ace::Other(9)]);
        for rule in [Rule::NoOtherWriter, Rule::Private] {
            let why = check(ME, &conditional, rule).unwrap_err();
            assert!(why.contains("type 9"), "{why}");
        }
    }

    /// Under Windows (and Wine) for real: a folder we make is ours and private, also when it
    /// existed first with the parent's grants; one opened to Everyone is read back as such.
    #[cfg(windows)]
    #[test]
    fn a_folder_we_make_private_reads_back_as_this_users_and_systems_only() {
        let me = crate::os_fs::windows_security::this_user_sid().unwrap();
        let tmp = tempfile::tempdir().unwrap();
        let fresh = tmp.path().join("fresh");
        std::fs::create_dir(&fresh).unwrap();
        make_private(&fresh, false).unwrap();
        let existed = tmp.path().join("existed");
        std::fs::create_dir(&existed).unwrap();
        make_private(&existed, true).unwrap();
        for dir in [&fresh, &existed] {
            let security = read(dir).unwrap();
            assert_eq!(check(&me, &security, Rule::Private), Ok(()), "{security:?}");
        }
    }
}
