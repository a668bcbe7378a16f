; Agent Tray's Windows installer: the CLI (agent-tray.exe: the hooks, `list`, `install`,
; `doctor`) and, when it was built, the desktop app, per user, into one unversioned folder.
;
; Why a script of our own (and not only Tauri's bundler): the installer must carry the CLI and put
; it on the user's PATH, and it is built and tested on Linux (Debian's makensis, mingw-w64 builds,
; Wine) by scripts/windows/build-installer.sh and scripts/check-windows.sh.
;
; - The folder is `%LOCALAPPDATA%\Programs\Agent Tray`, the same for every version: the hooks
;   `agent-tray install` writes name the CLI there (its own path), so an update that replaces the
;   files keeps every hook working.
; - PATH: the folder is added to the user's `Path` (HKCU\Environment) once, and taken off on
;   uninstall, every other entry kept as it was; then running programs are told
;   (WM_SETTINGCHANGE "Environment").
;
; Defines (makensis -D...): CLI (the agent-tray.exe to pack), DESKTOP (optional: the app's
; exe), VERSION, OUTFILE, FAST (zlib instead of lzma, for the check's throwaway builds).

Unicode true
; 64-bit stubs: the app is 64-bit, and Wine here runs no 32-bit programs.
Target amd64-unicode
RequestExecutionLevel user
!ifdef FAST
  SetCompressor zlib ; the check's throwaway builds: a third of lzma's time
!else
  SetCompressor /SOLID lzma
!endif

!include "LogicLib.nsh"
!include "WordFunc.nsh"
!include "WinMessages.nsh"

!ifndef VERSION
  !define VERSION "0.0.0"
!endif
!ifndef OUTFILE
  !define OUTFILE "agent-tray-setup.exe"
!endif

!define UNINSTALL_KEY "Software\Microsoft\Windows\CurrentVersion\Uninstall\AgentTray"

Name "Agent Tray"
OutFile "${OUTFILE}"
InstallDir "$LOCALAPPDATA\Programs\Agent Tray"
ShowInstDetails nevershow

Page directory
Page instfiles
UninstPage uninstConfirm
UninstPage instfiles

Section "Agent Tray"
  SetOutPath "$INSTDIR"
  File "/oname=agent-tray.exe" "${CLI}"
!ifdef DESKTOP
  File "/oname=agent-tray-desktop.exe" "${DESKTOP}"
  CreateDirectory "$SMPROGRAMS\Agent Tray"
  CreateShortcut "$SMPROGRAMS\Agent Tray\Agent Tray.lnk" "$INSTDIR\agent-tray-desktop.exe"
!endif
  WriteUninstaller "$INSTDIR\uninstall.exe"

  ; The user's Path, with the folder added once.
  ReadRegStr $0 HKCU "Environment" "Path"
  ${If} $0 == ""
    StrCpy $1 "$INSTDIR"
  ${Else}
    ${WordAdd} "$0" ";" "+$INSTDIR" $1
  ${EndIf}
  WriteRegExpandStr HKCU "Environment" "Path" "$1"
  SendMessage ${HWND_BROADCAST} ${WM_SETTINGCHANGE} 0 "STR:Environment" /TIMEOUT=2000

  WriteRegStr HKCU "${UNINSTALL_KEY}" "DisplayName" "Agent Tray"
  WriteRegStr HKCU "${UNINSTALL_KEY}" "DisplayVersion" "${VERSION}"
  WriteRegStr HKCU "${UNINSTALL_KEY}" "InstallLocation" "$INSTDIR"
  WriteRegStr HKCU "${UNINSTALL_KEY}" "UninstallString" '"$INSTDIR\uninstall.exe"'
  WriteRegStr HKCU "${UNINSTALL_KEY}" "QuietUninstallString" '"$INSTDIR\uninstall.exe" /S'
  WriteRegDWORD HKCU "${UNINSTALL_KEY}" "NoModify" 1
  WriteRegDWORD HKCU "${UNINSTALL_KEY}" "NoRepair" 1
SectionEnd

Section "Uninstall"
  Delete "$INSTDIR\agent-tray.exe"
  Delete "$INSTDIR\agent-tray-desktop.exe"
  Delete "$SMPROGRAMS\Agent Tray\Agent Tray.lnk"
  RMDir "$SMPROGRAMS\Agent Tray"
  Delete "$INSTDIR\uninstall.exe"
  RMDir "$INSTDIR"

  ; The user's Path without the folder, every other entry kept; empty: the value goes.
  ReadRegStr $0 HKCU "Environment" "Path"
  ${un.WordAdd} "$0" ";" "-$INSTDIR" $1
  ${If} $1 == ""
    DeleteRegValue HKCU "Environment" "Path"
  ${Else}
    WriteRegExpandStr HKCU "Environment" "Path" "$1"
  ${EndIf}
  SendMessage ${HWND_BROADCAST} ${WM_SETTINGCHANGE} 0 "STR:Environment" /TIMEOUT=2000

  DeleteRegKey HKCU "${UNINSTALL_KEY}"
SectionEnd
