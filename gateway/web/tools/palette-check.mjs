// Checks that the freshness colors of the map (src/palette.json) stay apart for people with
// color-vision deficiencies: each color is simulated under protanopia, deuteranopia and
// tritanopia (Machado, Oliveira & Fernandes 2009, severity 1.0, applied in linear RGB),
// and every pair must differ by CIEDE2000 >= 20 under every kind of vision and from the
// land and ocean behind it by >= 10. Run by `make web`; exits 1 when a pair is too close.
import { readFileSync } from "node:fs";

const palette = JSON.parse(readFileSync(new URL("../src/palette.json", import.meta.url)));
const machado = {
  normal: [[1, 0, 0], [0, 1, 0], [0, 0, 1]],
  protanopia: [[0.152286, 1.052583, -0.204868], [0.114503, 0.786281, 0.099216], [-0.003882, -0.048116, 1.051998]],
  deuteranopia: [[0.367322, 0.860646, -0.227968], [0.280085, 0.672501, 0.047413], [-0.01182, 0.04294, 0.968881]],
  tritanopia: [[1.255528, -0.076749, -0.178779], [-0.078411, 0.930809, 0.147602], [0.004733, 0.691367, 0.3039]],
};
const toLin = (c) => (c <= 0.04045 ? c / 12.92 : ((c + 0.055) / 1.055) ** 2.4);
const hex = (h) => [1, 3, 5].map((i) => toLin(parseInt(h.slice(i, i + 2), 16) / 255));
const clamp = (x) => Math.min(1, Math.max(0, x));
function lab([r, g, b]) {
  const x = (0.4124 * r + 0.3576 * g + 0.1805 * b) / 0.95047;
  const y = 0.2126 * r + 0.7152 * g + 0.0722 * b;
  const z = (0.0193 * r + 0.1192 * g + 0.9505 * b) / 1.08883;
  const f = (t) => (t > 216 / 24389 ? Math.cbrt(t) : (24389 / 27 * t + 16) / 116);
  return [116 * f(y) - 16, 500 * (f(x) - f(y)), 200 * (f(y) - f(z))];
}
function de2000([L1, a1, b1], [L2, a2, b2]) {
  const rad = Math.PI / 180;
  const C1 = Math.hypot(a1, b1), C2 = Math.hypot(a2, b2), Cb = (C1 + C2) / 2;
  const G = 0.5 * (1 - Math.sqrt(Cb ** 7 / (Cb ** 7 + 25 ** 7)));
  const a1p = (1 + G) * a1, a2p = (1 + G) * a2;
  const C1p = Math.hypot(a1p, b1), C2p = Math.hypot(a2p, b2);
  const h = (b, a) => { const v = Math.atan2(b, a) / rad; return v < 0 ? v + 360 : v; };
  const h1p = h(b1, a1p), h2p = h(b2, a2p);
  const dLp = L2 - L1, dCp = C2p - C1p;
  let dhp = C1p * C2p === 0 ? 0 : h2p - h1p;
  if (dhp > 180) dhp -= 360; else if (dhp < -180) dhp += 360;
  const dHp = 2 * Math.sqrt(C1p * C2p) * Math.sin((dhp / 2) * rad);
  const Lbp = (L1 + L2) / 2, Cbp = (C1p + C2p) / 2;
  let hbp = h1p + h2p;
  if (C1p * C2p !== 0) hbp = Math.abs(h1p - h2p) > 180 ? (h1p + h2p + (h1p + h2p < 360 ? 360 : -360)) / 2 : (h1p + h2p) / 2;
  const T = 1 - 0.17 * Math.cos((hbp - 30) * rad) + 0.24 * Math.cos(2 * hbp * rad) + 0.32 * Math.cos((3 * hbp + 6) * rad) - 0.2 * Math.cos((4 * hbp - 63) * rad);
  const dTheta = 30 * Math.exp(-(((hbp - 275) / 25) ** 2));
  const RC = 2 * Math.sqrt(Cbp ** 7 / (Cbp ** 7 + 25 ** 7));
  const SL = 1 + (0.015 * (Lbp - 50) ** 2) / Math.sqrt(20 + (Lbp - 50) ** 2), SC = 1 + 0.045 * Cbp, SH = 1 + 0.015 * Cbp * T;
  const RT = -Math.sin(2 * dTheta * rad) * RC;
  return Math.sqrt((dLp / SL) ** 2 + (dCp / SC) ** 2 + (dHp / SH) ** 2 + RT * (dCp / SC) * (dHp / SH));
}
const sim = (m, rgb) => m.map((row) => clamp(row[0] * rgb[0] + row[1] * rgb[1] + row[2] * rgb[2]));

const classes = Object.entries(palette.freshness);
const grounds = [["land", palette.map.land], ["ocean", palette.map.ocean]];
let failed = false;
for (const [vision, m] of Object.entries(machado)) {
  let worst = { d: Infinity }, worstBg = { d: Infinity };
  for (let i = 0; i < classes.length; i++) {
    const li = lab(sim(m, hex(classes[i][1].color)));
    for (let j = i + 1; j < classes.length; j++) {
      const d = de2000(li, lab(sim(m, hex(classes[j][1].color))));
      if (d < worst.d) worst = { d, pair: `${classes[i][0]}/${classes[j][0]}` };
    }
    for (const [g, c] of grounds) {
      const d = de2000(li, lab(sim(m, hex(c))));
      if (d < worstBg.d) worstBg = { d, pair: `${classes[i][0]}/${g}` };
    }
  }
  const ok = worst.d >= 20 && worstBg.d >= 10;
  failed ||= !ok;
  console.log(`${vision.padEnd(13)} closest pair ${worst.pair} dE2000=${worst.d.toFixed(1)}; closest to background ${worstBg.pair} dE2000=${worstBg.d.toFixed(1)} ${ok ? "ok" : "TOO CLOSE"}`);
}
process.exit(failed ? 1 : 0);
