#!/usr/bin/env python3
"""Draws every icon of Agent Tray from the shapes below: the app icon set and the tray's state icons.

Why a script and not a drawing program: the tray needs four state icons in two styles (colour for
Linux trays, black "template" images that macOS tints for light and dark menu bars) at two scales,
and the app icon in PNG, ICNS and ICO. Drawing them from one description keeps them consistent, and
`python3 icons/generate.py` re-creates every file byte for byte (no timestamps are written), so
`git diff` after running it shows whether the committed icons are current.

It needs only the Python standard library (PNG is zlib + CRC; ICNS and ICO embed PNGs), so it runs
on any machine with no image tool installed. Shapes are rendered with 4x4 supersampling.

The four tray states, in the order of priority the tray uses (see src/tray_model.rs):
  none       nobody is running        a hollow ring
  idle       all sessions idle        a filled disc
  working    something is working     a disc with three dots (an ellipsis: "busy")
  needs-you  something waits for you  a disc with an exclamation mark
Each has a distinct shape, not only a colour, so the template (single-colour) images still tell
them apart.
"""

import math
import os
import struct
import zlib

HERE = os.path.dirname(os.path.abspath(__file__))
SS = 4  # supersampling per axis

# Colours (RGBA). `HOLE` marks a cut-out: background colour in the colour style, transparency in
# the template style.
SLATE = (120, 130, 148, 255)
GREY = (150, 156, 166, 255)
BLUE = (37, 119, 235, 255)
ORANGE = (234, 98, 20, 255)
WHITE = (255, 255, 255, 255)
BLACK = (0, 0, 0, 255)
HOLE = None


# --- shapes: each is a coverage test on a unit square (0..1 on both axes) --------------------------

def disc(cx, cy, r):
    return lambda x, y: (x - cx) ** 2 + (y - cy) ** 2 <= r * r


def ring(cx, cy, r_out, r_in):
    return lambda x, y: r_in * r_in <= (x - cx) ** 2 + (y - cy) ** 2 <= r_out * r_out


def rounded_rect(x0, y0, x1, y1, r):
    def inside(x, y):
        if not (x0 <= x <= x1 and y0 <= y <= y1):
            return False
        nx = min(max(x, x0 + r), x1 - r)
        ny = min(max(y, y0 + r), y1 - r)
        return (x - nx) ** 2 + (y - ny) ** 2 <= r * r

    return inside


def tray_state(state):
    """The layers (shape, colour) of one tray state icon, painted in order."""
    c = 0.5
    if state == "none":
        return [(ring(c, c, 0.42, 0.28), GREY)]
    if state == "idle":
        return [(disc(c, c, 0.42), SLATE)]
    if state == "working":
        return [
            (disc(c, c, 0.46), BLUE),
            (disc(0.28, c, 0.075), HOLE),
            (disc(0.50, c, 0.075), HOLE),
            (disc(0.72, c, 0.075), HOLE),
        ]
    if state == "needs-you":
        return [
            (disc(c, c, 0.46), ORANGE),
            (rounded_rect(0.43, 0.18, 0.57, 0.60, 0.06), HOLE),
            (disc(c, 0.75, 0.08), HOLE),
        ]
    raise ValueError(state)


def app_icon():
    """A dark rounded square holding three session rows, each with a state dot."""
    bg = (31, 36, 48, 255)
    row = (72, 80, 98, 255)
    layers = [(rounded_rect(0.06, 0.06, 0.94, 0.94, 0.2), bg)]
    for i, colour in enumerate([ORANGE, BLUE, SLATE]):
        y = 0.30 + i * 0.20
        layers.append((rounded_rect(0.20, y - 0.06, 0.80, y + 0.06, 0.06), row))
        layers.append((disc(0.30, y, 0.075), colour))
        layers.append((rounded_rect(0.42, y - 0.02, 0.72, y + 0.02, 0.02), (200, 206, 216, 255)))
    return layers


# --- rendering ------------------------------------------------------------------------------------

def render(layers, size, template=False):
    """RGBA bytes of `layers` at `size` x `size`. In template style every painted pixel is black."""
    out = bytearray()
    for py in range(size):
        out.append(0)  # PNG filter type "none" for this row
        for px in range(size):
            acc = [0.0, 0.0, 0.0, 0.0]
            for sy in range(SS):
                for sx in range(SS):
                    x = (px + (sx + 0.5) / SS) / size
                    y = (py + (sy + 0.5) / SS) / size
                    colour = (0, 0, 0, 0)
                    for inside, paint in layers:
                        if inside(x, y):
                            if paint is HOLE:
                                colour = (0, 0, 0, 0) if template else WHITE
                            else:
                                colour = BLACK if template else paint
                    a = colour[3] / 255.0
                    acc[0] += colour[0] * a
                    acc[1] += colour[1] * a
                    acc[2] += colour[2] * a
                    acc[3] += a
            n = SS * SS
            alpha = acc[3] / n
            if alpha > 0:
                rgb = [round(acc[i] / acc[3]) for i in range(3)]
            else:
                rgb = [0, 0, 0]
            out.extend(bytes(rgb + [round(alpha * 255)]))
    return png(size, size, bytes(out))


def png(width, height, raw_rows):
    def chunk(kind, data):
        body = kind + data
        return struct.pack(">I", len(data)) + body + struct.pack(">I", zlib.crc32(body) & 0xFFFFFFFF)

    header = struct.pack(">IIBBBBB", width, height, 8, 6, 0, 0, 0)  # 8-bit RGBA
    return (
        b"\x89PNG\r\n\x1a\n"
        + chunk(b"IHDR", header)
        + chunk(b"IDAT", zlib.compress(raw_rows, 9))
        + chunk(b"IEND", b"")
    )


def icns(pngs_by_type):
    """An Apple icon file: a header and one entry per size, each entry a PNG."""
    body = b"".join(kind + struct.pack(">I", len(data) + 8) + data for kind, data in pngs_by_type)
    return b"icns" + struct.pack(">I", len(body) + 8) + body


def ico(pngs_by_size):
    """A Windows icon file whose entries are PNGs (valid since Windows Vista)."""
    header = struct.pack("<HHH", 0, 1, len(pngs_by_size))
    offset = 6 + 16 * len(pngs_by_size)
    entries, blobs = b"", b""
    for size, data in pngs_by_size:
        dim = 0 if size >= 256 else size  # 0 means 256 in an ICO directory entry
        entries += struct.pack("<BBBBHHII", dim, dim, 0, 0, 1, 32, len(data), offset)
        blobs += data
        offset += len(data)
    return header + entries + blobs


def write(relpath, data):
    path = os.path.join(HERE, relpath)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "wb") as f:
        f.write(data)


def main():
    states = ["none", "idle", "working", "needs-you"]
    for state in states:
        layers = tray_state(state)
        # Colour icons for Linux trays (22-24 px at 1x; 32 and 64 give crisp downscales).
        write(f"tray/{state}.png", render(layers, 32))
        write(f"tray/{state}@2x.png", render(layers, 64))
        # Template images for the macOS menu bar (22 pt), tinted by the system.
        write(f"tray/template/{state}.png", render(layers, 22, template=True))
        write(f"tray/template/{state}@2x.png", render(layers, 44, template=True))

    app = app_icon()
    sizes = {s: render(app, s) for s in (16, 32, 48, 128, 256, 512)}
    write("32x32.png", sizes[32])
    write("128x128.png", sizes[128])
    write("128x128@2x.png", sizes[256])
    write("icon.png", sizes[512])
    write("icon.icns", icns([(b"ic07", sizes[128]), (b"ic08", sizes[256]), (b"ic09", sizes[512])]))
    write("icon.ico", ico([(s, sizes[s]) for s in (16, 32, 48, 256)]))


if __name__ == "__main__":
    main()
