//! One line on the control socket: any process of the user can connect and send anything.
//! A request the engine accepts must encode back to a line that decodes to the same request.
#![no_main]

use agent_tray::control::protocol::{decode_request, encode_request};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Ok(request) = decode_request(data) {
        let line = encode_request(&request).expect("an accepted request encodes");
        let back =
            decode_request(&line).unwrap_or_else(|e| panic!("re-encoded request refused: {e:?}"));
        assert_eq!(back, request, "a request does not survive a round trip");
    }
});
