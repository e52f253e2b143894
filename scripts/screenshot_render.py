"""Renders a terminal capture (tmux capture-pane -p -e: text with SGR escape
sequences) to a PNG, cell by cell, with DejaVu Sans Mono.

    python3 scripts/screenshot_render.py capture.ansi out.png [title]
"""
import re
import sys
import unicodedata

from PIL import Image, ImageDraw, ImageFont

FONT_DIR = "/usr/share/fonts/truetype/dejavu/"
SIZE = 15
DEFAULT_FG = (224, 226, 234)  # Neovim's default dark colour scheme: NvimLightGrey2
DEFAULT_BG = (20, 22, 27)  # NvimDarkGrey2
BASE16 = [
    (7, 8, 13), (255, 192, 185), (179, 246, 192), (252, 227, 149),
    (166, 219, 255), (255, 202, 255), (140, 248, 247), (196, 198, 205),
    (79, 82, 88), (255, 192, 185), (179, 246, 192), (252, 227, 149),
    (166, 219, 255), (255, 202, 255), (140, 248, 247), (238, 241, 248),
]


def xterm256(n):
    if n < 16:
        return BASE16[n]
    if n < 232:
        n -= 16
        steps = [0, 95, 135, 175, 215, 255]
        return (steps[n // 36], steps[(n // 6) % 6], steps[n % 6])
    v = 8 + (n - 232) * 10
    return (v, v, v)


class Style:
    def __init__(self):
        self.reset()

    def reset(self):
        self.fg = None
        self.bg = None
        self.bold = False
        self.italic = False
        self.underline = False
        self.reverse = False

    def copy(self):
        s = Style()
        s.__dict__.update(self.__dict__)
        return s

    def apply(self, params):
        ps = [int(p) if p else 0 for p in params.split(";")] if params else [0]
        i = 0
        while i < len(ps):
            p = ps[i]
            if p == 0:
                self.reset()
            elif p == 1:
                self.bold = True
            elif p == 3:
                self.italic = True
            elif p == 4:
                self.underline = True
            elif p == 7:
                self.reverse = True
            elif p == 22:
                self.bold = False
            elif p == 23:
                self.italic = False
            elif p == 24:
                self.underline = False
            elif p == 27:
                self.reverse = False
            elif 30 <= p <= 37:
                self.fg = BASE16[p - 30]
            elif 90 <= p <= 97:
                self.fg = BASE16[p - 90 + 8]
            elif 40 <= p <= 47:
                self.bg = BASE16[p - 40]
            elif 100 <= p <= 107:
                self.bg = BASE16[p - 100 + 8]
            elif p == 39:
                self.fg = None
            elif p == 49:
                self.bg = None
            elif p in (38, 48, 58) and i + 1 < len(ps):
                if ps[i + 1] == 5 and i + 2 < len(ps):
                    colour = xterm256(ps[i + 2])
                    i += 2
                elif ps[i + 1] == 2 and i + 4 < len(ps):
                    colour = tuple(ps[i + 2:i + 5])
                    i += 4
                else:
                    colour = None
                if p == 38:
                    self.fg = colour
                elif p == 48:
                    self.bg = colour
            i += 1


SGR = re.compile(r"\x1b\[([0-9;]*)m")


def cells(line, style):
    """Yields (char, style) for each character of `line`, following its SGR codes."""
    pos = 0
    for m in SGR.finditer(line):
        for ch in line[pos:m.start()]:
            yield ch, style.copy()
        style.apply(m.group(1))
        pos = m.end()
    for ch in line[pos:]:
        yield ch, style.copy()


def main():
    src, out = sys.argv[1], sys.argv[2]
    title = sys.argv[3] if len(sys.argv) > 3 else ""
    fonts = {
        (False, False): ImageFont.truetype(FONT_DIR + "DejaVuSansMono.ttf", SIZE),
        (True, False): ImageFont.truetype(FONT_DIR + "DejaVuSansMono-Bold.ttf", SIZE),
        (False, True): ImageFont.truetype(FONT_DIR + "DejaVuSansMono-Oblique.ttf", SIZE),
        (True, True): ImageFont.truetype(FONT_DIR + "DejaVuSansMono-BoldOblique.ttf", SIZE),
    }
    fallback = ImageFont.truetype(FONT_DIR + "DejaVuSans.ttf", SIZE)
    cw = round(fonts[(False, False)].getlength("M"))
    ch = round(SIZE * 1.3)
    lines = open(src, encoding="utf-8").read().rstrip("\n").split("\n")
    cols = max(len(SGR.sub("", l)) for l in lines)
    pad, bar = 16, 30 if title else 0
    img = Image.new("RGB", (cols * cw + 2 * pad, len(lines) * ch + 2 * pad + bar), (40, 42, 50))
    draw = ImageDraw.Draw(img)
    draw.rectangle([pad // 2, pad // 2 + bar, img.width - pad // 2, img.height - pad // 2], fill=DEFAULT_BG)
    if title:
        for i, c in enumerate([(255, 95, 87), (254, 188, 46), (40, 200, 64)]):
            draw.ellipse([pad + i * 20, 9, pad + i * 20 + 12, 21], fill=c)
        draw.text((pad + 70, 7), title, font=fonts[(False, False)], fill=(200, 202, 210))
    style = Style()
    for row, line in enumerate(lines):
        col = 0
        y = pad + bar + row * ch
        for c, s in cells(line, style):
            width = 2 if unicodedata.east_asian_width(c) in ("W", "F") else 1
            fg, bg = s.fg or DEFAULT_FG, s.bg or DEFAULT_BG
            if s.reverse:
                fg, bg = bg, fg
            x = pad + col * cw
            if bg != DEFAULT_BG:
                draw.rectangle([x, y, x + width * cw - 1, y + ch - 1], fill=bg)
            if c.strip():
                font = fonts[(s.bold, s.italic)]
                if ord(c) >= 0x2800 and ord(c) <= 0x28FF:
                    font = fallback
                draw.text((x, y + 2), c, font=font, fill=fg)
            if s.underline:
                draw.line([x, y + ch - 2, x + width * cw - 1, y + ch - 2], fill=fg)
            col += width
    img.save(out, optimize=True)


if __name__ == "__main__":
    main()
