//! The module's memory map as `ethtool -m IFACE hex on` dumps it, decoded: the same bytes in
//! every ethtool version, where the text report is not.
//!
//! SFF-8636 (QSFP+/QSFP28/QSFP56): lower page 00h holds the monitors and flags, upper page 00h
//! the identity. CMIS (QSFP-DD, OSFP): lower page the module monitors, upper page 00h the
//! identity, page 11h the per-lane monitors and flags. ethtool over netlink dumps 128 bytes
//! per call, so a bundle may hold several dumps; a line `# page 0x11` (written by
//! `fabcheck bundle`) says the dumps after it are of that page's upper half.

use super::module::{form_factor, mw_to_dbm, Direction, Figure, FlagLevel, Lanes, Media, Module, ModuleFlag};
use std::collections::BTreeMap;

/// The bytes read, by page; offsets 0..=255 within each (the lower half is page 00h's).
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Pages(BTreeMap<u8, BTreeMap<u16, u8>>);

impl Pages {
    fn byte(&self, page: u8, offset: u16) -> Option<u8> {
        let page = if offset < 128 { 0 } else { page };
        self.0.get(&page)?.get(&offset).copied()
    }

    fn u16(&self, page: u8, offset: u16) -> Option<u16> {
        Some(u16::from_be_bytes([self.byte(page, offset)?, self.byte(page, offset + 1)?]))
    }

    fn ascii(&self, page: u8, first: u16, last: u16) -> Option<String> {
        let bytes: Option<Vec<u8>> = (first..=last).map(|o| self.byte(page, o)).collect();
        let text: String = bytes?.into_iter().map(|b| if (32..=126).contains(&b) { char::from(b) } else { '_' }).collect();
        let text = text.trim_end().to_string();
        (!text.is_empty()).then_some(text)
    }
}

/// Reads a hex dump (`0x0010:\t\t00 11 22 ...`, any spacing), at most 64 KiB of lines.
pub fn parse_hex_dump(report: &str) -> Pages {
    let mut pages = Pages::default();
    let mut page = 0u8;
    for line in report.lines().take(2048) {
        let line = line.trim();
        if let Some(rest) = line.strip_prefix("# page") {
            page = u8::from_str_radix(rest.trim().trim_start_matches("0x"), 16).unwrap_or(0xff);
            continue;
        }
        let Some((offset, bytes)) = line.split_once(':') else { continue };
        let Some(hex) = offset.trim().strip_prefix("0x") else { continue };
        let Ok(offset) = u16::from_str_radix(hex, 16) else { continue };
        for (i, word) in bytes.split_whitespace().take(16).enumerate() {
            let Ok(value) = u8::from_str_radix(word, 16) else { break };
            let at = offset.saturating_add(i as u16);
            // A flat legacy dump of SFF-8636 continues past 255 with pages 01h-03h: not needed.
            if at < 256 {
                let target = if at < 128 { 0 } else { page };
                pages.0.entry(target).or_default().insert(at, value);
            }
        }
    }
    pages
}

/// Decodes the dump; `None` when it holds no identifier byte.
pub fn decode(pages: &Pages) -> Option<Module> {
    let id = pages.byte(0, 0)?;
    let mut m = Module { kind: form_factor(id).map(str::to_string), ..Module::default() };
    match id {
        0x0c | 0x0d | 0x11 => sff8636(pages, &mut m),
        0x18 | 0x19 | 0x1e => cmis(pages, &mut m),
        _ => {}
    }
    if m.media == Some(Media::Copper) {
        m.rx_power_dbm = None;
        m.tx_power_dbm = None;
        m.tx_bias_ma = None;
    }
    Some(m)
}

/// A module temperature: signed, 1/256 °C; ethtool takes 0 and 0xffff as "no monitor".
fn temperature(raw: u16) -> Option<f64> {
    (raw != 0 && raw != 0xffff).then(|| f64::from(raw as i16) / 256.0)
}

/// Power in units of 0.1 µW → dBm.
fn power(raw: u16) -> f64 {
    mw_to_dbm(f64::from(raw) / 10_000.0)
}

/// SFF-8636 rev 2.10a: lower page bytes 6 (temperature flags), 9-10 (Rx power), 11-12 (Tx
/// bias), 13-14 (Tx power), 22-23 temperature, 34-57 per-lane monitors; upper page 00h 147
/// device technology, 148-163 vendor, 168-183 part, 196-211 serial.
fn sff8636(p: &Pages, m: &mut Module) {
    m.vendor = p.ascii(0, 148, 163);
    m.part = p.ascii(0, 168, 183);
    m.serial = p.ascii(0, 196, 211);
    m.media = p.byte(0, 147).map(|t| if t & 0xf0 >= 0xa0 { Media::Copper } else { Media::Optical });
    m.temperature_c = p.u16(0, 22).and_then(temperature);
    if m.temperature_c.is_some() {
        let mut rx = Lanes::default();
        let mut tx = Lanes::default();
        let mut bias = Lanes::default();
        for lane in 1..=4u8 {
            let at = 2 * u16::from(lane - 1);
            rx.set(lane, p.u16(0, 34 + at).map(power));
            bias.set(lane, p.u16(0, 42 + at).map(|v| f64::from(v) * 0.002));
            tx.set(lane, p.u16(0, 50 + at).map(power));
        }
        (m.rx_power_dbm, m.tx_power_dbm, m.tx_bias_ma) = (rx.done(), tx.done(), bias.done());
    }
    // Module flags: bit 7 high alarm, 6 low alarm, 5 high warning, 4 low warning.
    if let Some(b) = p.byte(0, 6) {
        push_four(m, Figure::Temperature, None, b >> 4);
    }
    // Lane flags: two lanes a byte, the first in the high nibble.
    for (figure, first) in [(Figure::RxPower, 9u16), (Figure::TxBias, 11), (Figure::TxPower, 13)] {
        for lane in 1..=4u8 {
            let Some(b) = p.byte(0, first + u16::from((lane - 1) / 2)) else { continue };
            let nibble = if lane % 2 == 1 { b >> 4 } else { b & 0x0f };
            push_four(m, figure, Some(lane), nibble);
        }
    }
    // Byte 3: Rx loss of signal, lanes 1-4 in bits 0-3.
    if let (Some(b), Some(Media::Optical)) = (p.byte(0, 3), m.media) {
        for lane in 1..=4u8 {
            if b & (1 << (lane - 1)) != 0 {
                m.flags.push(ModuleFlag { figure: Figure::RxLos, level: FlagLevel::Alarm, direction: None, lane: Some(lane) });
            }
        }
    }
}

/// CMIS 5.x: lower page byte 9 (temperature flags in bits 0-3), 14-15 temperature; upper page
/// 00h 129-144 vendor, 148-163 part, 166-181 serial, 212 media interface technology; page 11h
/// 147 Rx LOS, 149-152 Rx power flags, 143-146 Tx bias flags, 139-142 Tx power flags (one bit
/// a lane), 154-169 Tx power, 170-185 Tx bias, 186-201 Rx power.
fn cmis(p: &Pages, m: &mut Module) {
    m.vendor = p.ascii(0, 129, 144);
    m.part = p.ascii(0, 148, 163);
    m.serial = p.ascii(0, 166, 181);
    m.media = p.byte(0, 212).map(|t| if (0x0a..=0x0f).contains(&t) { Media::Copper } else { Media::Optical });
    m.temperature_c = p.u16(0, 14).and_then(temperature);
    if let Some(b) = p.byte(0, 9) {
        // Bits 0-3: high alarm, low alarm, high warning, low warning: reversed into SFF order.
        let nibble = ((b & 1) << 3) | ((b & 2) << 1) | ((b & 4) >> 1) | ((b & 8) >> 3);
        push_four(m, Figure::Temperature, None, nibble);
    }
    let mut rx = Lanes::default();
    let mut tx = Lanes::default();
    let mut bias = Lanes::default();
    for lane in 1..=8u8 {
        let at = 2 * u16::from(lane - 1);
        tx.set(lane, p.u16(0x11, 154 + at).map(power));
        bias.set(lane, p.u16(0x11, 170 + at).map(|v| f64::from(v) * 0.002));
        rx.set(lane, p.u16(0x11, 186 + at).map(power));
    }
    (m.rx_power_dbm, m.tx_power_dbm, m.tx_bias_ma) = (rx.done(), tx.done(), bias.done());
    for (figure, first) in [(Figure::TxPower, 139u16), (Figure::TxBias, 143), (Figure::RxPower, 149)] {
        for lane in 1..=8u8 {
            let bit = |o: u16| p.byte(0x11, first + o).map_or(0, |b| (b >> (lane - 1)) & 1);
            let nibble = (bit(0) << 3) | (bit(1) << 2) | (bit(2) << 1) | bit(3);
            push_four(m, figure, Some(lane), nibble);
        }
    }
    if let (Some(b), Some(Media::Optical)) = (p.byte(0x11, 147), m.media) {
        for lane in 1..=8u8 {
            if b & (1 << (lane - 1)) != 0 {
                m.flags.push(ModuleFlag { figure: Figure::RxLos, level: FlagLevel::Alarm, direction: None, lane: Some(lane) });
            }
        }
    }
}

/// Pushes the raised flags of a nibble ordered high alarm, low alarm, high warning, low warning.
fn push_four(m: &mut Module, figure: Figure, lane: Option<u8>, nibble: u8) {
    let kinds = [
        (8, FlagLevel::Alarm, Direction::High),
        (4, FlagLevel::Alarm, Direction::Low),
        (2, FlagLevel::Warning, Direction::High),
        (1, FlagLevel::Warning, Direction::Low),
    ];
    for (bit, level, direction) in kinds {
        if nibble & bit != 0 {
            m.flags.push(ModuleFlag { figure, level, direction: Some(direction), lane });
        }
    }
}

/// Fills what the text report knows and the bytes did not say.
pub fn merge(bytes: Option<Module>, text: Option<Module>) -> Option<Module> {
    match (bytes, text) {
        (Some(mut b), Some(t)) => {
            b.kind = b.kind.or(t.kind);
            b.vendor = b.vendor.or(t.vendor);
            b.part = b.part.or(t.part);
            b.serial = b.serial.or(t.serial);
            b.media = b.media.or(t.media);
            b.temperature_c = b.temperature_c.or(t.temperature_c);
            if b.media != Some(Media::Copper) {
                b.rx_power_dbm = b.rx_power_dbm.or(t.rx_power_dbm);
                b.tx_power_dbm = b.tx_power_dbm.or(t.tx_power_dbm);
                b.tx_bias_ma = b.tx_bias_ma.or(t.tx_bias_ma);
            }
            if b.flags.is_empty() {
                b.flags = t.flags;
            }
            Some(b)
        }
        (b, t) => b.or(t),
    }
}
