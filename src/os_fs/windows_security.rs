//! Windows: who a process runs as, and security descriptors from their SDDL text.
//!
//! Both the control pipe (its descriptor, the check of the server's owner) and our private
//! folders (their protected DACLs) speak in SIDs and SDDL. They live here, in the OS layer, so
//! that the folder code does not reach up into the control channel for them and neither keeps a
//! copy of the other's conversion code.
#![cfg(windows)]

use std::io;

use windows_sys::Win32::Foundation::{CloseHandle, LocalFree, HANDLE};
use windows_sys::Win32::Security::Authorization::{
    ConvertSidToStringSidW, ConvertStringSecurityDescriptorToSecurityDescriptorW, SDDL_REVISION_1,
};
use windows_sys::Win32::Security::{
    GetTokenInformation, TokenUser, PSECURITY_DESCRIPTOR, PSID, TOKEN_QUERY, TOKEN_USER,
};
use windows_sys::Win32::System::Threading::{GetCurrentProcess, OpenProcessToken};

/// The user SID of a process's token, copied out as its string form.
pub(crate) fn token_user_sid(process: HANDLE) -> io::Result<String> {
    struct Token(HANDLE);
    impl Drop for Token {
        fn drop(&mut self) {
            // SAFETY: a token handle this value owns, closed once.
            unsafe { CloseHandle(self.0) };
        }
    }
    let mut token: HANDLE = std::ptr::null_mut();
    // SAFETY: a valid process handle and a writable handle slot.
    if unsafe { OpenProcessToken(process, TOKEN_QUERY, &mut token) } == 0 {
        return Err(io::Error::last_os_error());
    }
    let token = Token(token);
    let mut needed = 0u32;
    // SAFETY: asks for the size only (null buffer, zero length).
    unsafe { GetTokenInformation(token.0, TokenUser, std::ptr::null_mut(), 0, &mut needed) };
    let mut buf = vec![0u64; (needed as usize).div_ceil(8).max(1)];
    // SAFETY: a buffer of at least `needed` bytes, aligned for TOKEN_USER.
    if unsafe {
        GetTokenInformation(
            token.0,
            TokenUser,
            buf.as_mut_ptr().cast(),
            needed,
            &mut needed,
        )
    } == 0
    {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: the call filled a TOKEN_USER at the start of the buffer.
    let user = unsafe { &*(buf.as_ptr() as *const TOKEN_USER) };
    // SAFETY: the SID lives in `buf`, alive for the call.
    unsafe { sid_text(user.User.Sid) }
}

/// The string form (`S-1-5-21-…`) of a SID.
///
/// # Safety
/// `sid` points at a valid SID for the duration of the call.
pub unsafe fn sid_text(sid: PSID) -> io::Result<String> {
    let mut text: *mut u16 = std::ptr::null_mut();
    // SAFETY: the caller vouches for `sid`; the call allocates `text` with LocalAlloc.
    if unsafe { ConvertSidToStringSidW(sid, &mut text) } == 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: `text` is a NUL-terminated wide string from the call above.
    let sid = unsafe {
        let len = (0..).take_while(|&i| *text.add(i) != 0).count();
        String::from_utf16_lossy(std::slice::from_raw_parts(text, len))
    };
    // SAFETY: allocated by ConvertSidToStringSidW, freed once.
    unsafe { LocalFree(text.cast()) };
    Ok(sid)
}

/// This process's user SID.
pub fn this_user_sid() -> io::Result<String> {
    // SAFETY: the pseudo-handle of this process needs no closing.
    token_user_sid(unsafe { GetCurrentProcess() })
}

/// A security descriptor from its SDDL text, allocated by the system: the caller frees it with
/// `LocalFree` once.
pub fn descriptor_from_sddl(sddl: &str) -> io::Result<PSECURITY_DESCRIPTOR> {
    let sddl: Vec<u16> = sddl.encode_utf16().chain(std::iter::once(0)).collect();
    let mut descriptor: PSECURITY_DESCRIPTOR = std::ptr::null_mut();
    // SAFETY: a NUL-terminated SDDL string; the call allocates the descriptor.
    if unsafe {
        ConvertStringSecurityDescriptorToSecurityDescriptorW(
            sddl.as_ptr(),
            SDDL_REVISION_1,
            &mut descriptor,
            std::ptr::null_mut(),
        )
    } == 0
    {
        return Err(io::Error::last_os_error());
    }
    Ok(descriptor)
}
