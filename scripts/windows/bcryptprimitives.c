/* A stand-in for Windows' bcryptprimitives.dll, for Wine 8 only (scripts/check-windows.sh puts
 * it in its private Wine prefix; it is never shipped). Rust's standard library asks this DLL's
 * ProcessPrng for random bytes (HashMap seeds, temp file names); Wine 8 has the same generator
 * as advapi32's RtlGenRandom (SystemFunction036), which this forwards to. */
#include <windows.h>

BOOLEAN WINAPI SystemFunction036(PVOID buffer, ULONG length);

__declspec(dllexport) BOOL WINAPI ProcessPrng(PBYTE data, SIZE_T len) {
  while (len > 0) {
    ULONG chunk = len > 0x40000000 ? 0x40000000 : (ULONG)len;
    if (!SystemFunction036(data, chunk)) return FALSE;
    data += chunk;
    len -= chunk;
  }
  return TRUE;
}
