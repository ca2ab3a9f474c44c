//! The legacy sample record of stream 0: `TBRW_SampleRecordPC` (32 bytes)
//! followed by `TBRW_SampleRecordTSC` (8 bytes), with accessors for the
//! bit fields of the C unions.
//!
//! The structs are `#[repr(C)]` with the C size, so that the C layer can
//! hand them over as they are; all access goes through methods because the
//! C unions overlay IA-32 and IA-64 forms on the same bytes.

/// `TBRW_CodeDescriptor`: an IA-32 code segment descriptor (8 bytes).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
#[repr(C)]
pub struct CodeDescriptor {
    /// `lowWord`: `limitLow` (bits 0-15) and `baseLow` (bits 16-31).
    pub low_word: u32,
    /// `highWord`: `baseMid` 8, `accessed` 1, `readable` 1, `conforming` 1,
    /// `oneOne` 2, `dpl` 2, `pres` 1, `limitHi` 4, `sys` 1, `reserved_0` 1,
    /// `default_size` 1, `granularity` 1, `baseHi` 8, from bit 0.
    pub high_word: u32,
}

const fn bits(v: u32, shift: u32, width: u32) -> u32 {
    (v >> shift) & ((1u32 << width) - 1)
}

impl CodeDescriptor {
    /// `limitLow`.
    pub fn limit_low(self) -> u16 {
        self.low_word as u16
    }
    /// `baseLow`.
    pub fn base_low(self) -> u16 {
        (self.low_word >> 16) as u16
    }
    /// `baseMid`.
    pub fn base_mid(self) -> u8 {
        bits(self.high_word, 0, 8) as u8
    }
    /// `accessed`.
    pub fn accessed(self) -> bool {
        bits(self.high_word, 8, 1) != 0
    }
    /// `readable`.
    pub fn readable(self) -> bool {
        bits(self.high_word, 9, 1) != 0
    }
    /// `conforming`.
    pub fn conforming(self) -> bool {
        bits(self.high_word, 10, 1) != 0
    }
    /// `oneOne` (2 bits).
    pub fn one_one(self) -> u8 {
        bits(self.high_word, 11, 2) as u8
    }
    /// `dpl`: the descriptor privilege level.
    pub fn dpl(self) -> u8 {
        bits(self.high_word, 13, 2) as u8
    }
    /// `pres`: present.
    pub fn present(self) -> bool {
        bits(self.high_word, 15, 1) != 0
    }
    /// `limitHi` (4 bits).
    pub fn limit_hi(self) -> u8 {
        bits(self.high_word, 16, 4) as u8
    }
    /// `sys`.
    pub fn sys(self) -> bool {
        bits(self.high_word, 20, 1) != 0
    }
    /// `default_size`: 32-bit segment.
    pub fn default_size(self) -> bool {
        bits(self.high_word, 22, 1) != 0
    }
    /// `granularity`: limit in 4 KiB pages.
    pub fn granularity(self) -> bool {
        bits(self.high_word, 23, 1) != 0
    }
    /// `baseHi`.
    pub fn base_hi(self) -> u8 {
        bits(self.high_word, 24, 8) as u8
    }
    /// The 32-bit segment base.
    pub fn base(self) -> u32 {
        u32::from(self.base_low()) | (u32::from(self.base_mid()) << 16) | (u32::from(self.base_hi()) << 24)
    }
    /// The 20-bit segment limit.
    pub fn limit(self) -> u32 {
        u32::from(self.limit_low()) | (u32::from(self.limit_hi()) << 16)
    }
}

/// `TBRW_SampleRecordPC`: one legacy program-counter sample (32 bytes).
///
/// Bytes 0-15 hold either `iip`/`ipsr` (IA-64, `IA64PC` set) or
/// `eip`/`eflags`/`csd` (IA-32 and Intel 64).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
#[repr(C)]
pub struct SampleRecordPc {
    /// Bytes 0-7: `iip`, or `eip` (low half) and `eflags` (high half).
    pub word0: u64,
    /// Bytes 8-15: `ipsr`, or `csd`.
    pub word1: u64,
    /// `cs`: code segment selector (0 on IA-64).
    pub cs: u16,
    /// `cpuAndOS`: `cpuNum` 12, `notVmid0` 1, `codeMode` 2, reserved 1.
    pub cpu_and_os: u16,
    /// `tid`.
    pub tid: u32,
    /// `pidRecIndex`: the OS pid when `pidRecIndexRaw` is set.
    pub pid_rec_index: u32,
    /// `bitFields2`: `mrIndex` 20, `eventIndex` 8, `tidIsRaw` 1, `IA64PC` 1,
    /// `pidRecIndexRaw` 1, `mrIndexNone` 1.
    pub bit_fields2: u32,
}

const _: () = assert!(std::mem::size_of::<SampleRecordPc>() == 32);
const _: () = assert!(std::mem::size_of::<CodeDescriptor>() == 8);

fn set_bits(v: &mut u32, shift: u32, width: u32, x: u32) {
    let mask = ((1u32 << width) - 1) << shift;
    *v = (*v & !mask) | ((x << shift) & mask);
}

impl SampleRecordPc {
    /// Size of the record in bytes.
    pub const SIZE: usize = 32;

    /// Decodes the record from its 32 little-endian bytes.
    pub fn from_bytes(b: &[u8; 32]) -> Self {
        let u64_at = |o: usize| u64::from_le_bytes(b[o..o + 8].try_into().unwrap_or_default());
        let u32_at = |o: usize| u32::from_le_bytes(b[o..o + 4].try_into().unwrap_or_default());
        SampleRecordPc {
            word0: u64_at(0),
            word1: u64_at(8),
            cs: u16::from_le_bytes([b[16], b[17]]),
            cpu_and_os: u16::from_le_bytes([b[18], b[19]]),
            tid: u32_at(20),
            pid_rec_index: u32_at(24),
            bit_fields2: u32_at(28),
        }
    }

    /// Decodes the record from the first 32 bytes of `b`, if there are 32.
    pub fn from_slice(b: &[u8]) -> Option<Self> {
        b.get(..32).and_then(|s| s.try_into().ok()).map(Self::from_bytes)
    }

    /// The 32 little-endian bytes of the record.
    pub fn to_bytes(&self) -> [u8; 32] {
        let mut b = [0u8; 32];
        b[0..8].copy_from_slice(&self.word0.to_le_bytes());
        b[8..16].copy_from_slice(&self.word1.to_le_bytes());
        b[16..18].copy_from_slice(&self.cs.to_le_bytes());
        b[18..20].copy_from_slice(&self.cpu_and_os.to_le_bytes());
        b[20..24].copy_from_slice(&self.tid.to_le_bytes());
        b[24..28].copy_from_slice(&self.pid_rec_index.to_le_bytes());
        b[28..32].copy_from_slice(&self.bit_fields2.to_le_bytes());
        b
    }

    /// The instruction pointer: `iip` when `IA64PC` is set, else `eip`.
    pub fn ip(&self) -> u64 {
        if self.ia64_pc() {
            self.iip()
        } else {
            u64::from(self.eip())
        }
    }
    /// `iip` (IA-64).
    pub fn iip(&self) -> u64 {
        self.word0
    }
    /// `ipsr` (IA-64).
    pub fn ipsr(&self) -> u64 {
        self.word1
    }
    /// `eip` (IA-32).
    pub fn eip(&self) -> u32 {
        self.word0 as u32
    }
    /// `eflags` (IA-32).
    pub fn eflags(&self) -> u32 {
        (self.word0 >> 32) as u32
    }
    /// `csd` (IA-32).
    pub fn csd(&self) -> CodeDescriptor {
        CodeDescriptor { low_word: self.word1 as u32, high_word: (self.word1 >> 32) as u32 }
    }
    /// `cpuNum` (12 bits).
    pub fn cpu_num(&self) -> u16 {
        self.cpu_and_os & 0xFFF
    }
    /// `notVmid0`.
    pub fn not_vmid0(&self) -> bool {
        self.cpu_and_os & 0x1000 != 0
    }
    /// `codeMode` (2 bits, a [`processor_mode`](crate::module::processor_mode)).
    pub fn code_mode(&self) -> u8 {
        ((self.cpu_and_os >> 13) & 0x3) as u8
    }
    /// `mrIndex` (20 bits): module record index.
    pub fn mr_index(&self) -> u32 {
        bits(self.bit_fields2, 0, 20)
    }
    /// `eventIndex` (8 bits): the `event_id` of the triggering event.
    pub fn event_index(&self) -> u8 {
        bits(self.bit_fields2, 20, 8) as u8
    }
    /// `tidIsRaw`.
    pub fn tid_is_raw(&self) -> bool {
        bits(self.bit_fields2, 28, 1) != 0
    }
    /// `IA64PC`: the record holds `iip`/`ipsr`.
    pub fn ia64_pc(&self) -> bool {
        bits(self.bit_fields2, 29, 1) != 0
    }
    /// `pidRecIndexRaw`: `pidRecIndex` is the raw OS pid.
    pub fn pid_rec_index_raw(&self) -> bool {
        bits(self.bit_fields2, 30, 1) != 0
    }
    /// `mrIndexNone`: no module (unknown module).
    pub fn mr_index_none(&self) -> bool {
        bits(self.bit_fields2, 31, 1) != 0
    }

    /// Sets `iip` and `ipsr` and the `IA64PC` bit.
    pub fn set_ia64(&mut self, iip: u64, ipsr: u64) {
        self.word0 = iip;
        self.word1 = ipsr;
        set_bits(&mut self.bit_fields2, 29, 1, 1);
    }
    /// Sets a 64-bit instruction pointer (Intel 64): the record's one form
    /// that holds 64 bits is `iip` with the `IA64PC` bit set (`ipsr` 0), so
    /// that is what is written; [`ip`](Self::ip) reads it back, and so do
    /// Intel's reader and every report. [`set_ia32`](Self::set_ia32) writes
    /// the 32-bit form (`eip`, `eflags`, `csd`). A descriptor with its own
    /// 8-byte `ST_IP` field is the other way to record 64-bit ips.
    ///
    /// ```
    /// use tbrw::*;
    ///
    /// # let dir = tempfile::tempdir()?;
    /// # let path = dir.path().join("ip64.tb5");
    /// let mut w = Tb5Writer::create(&path)?;
    /// w.write_version_info(&VersionInfo {
    ///     sampling_driver_version: UNKNOWN_DRIVER_VERSION,
    ///     bind_version: 0,
    ///     sample_file_version: MIN_SAMPLE_FILE_VERSION,
    /// })?;
    /// let mut stream = w
    ///     .stream(0)?
    ///     .info(&StreamInfo { stream_type: stream_type::SAMPLING, ..Default::default() })?
    ///     .data_descriptor(&legacy_descriptor())?;
    /// let mut data = stream.data()?;
    /// for ip in [0x7f3a_1c01_2345u64, 0xffff_ffff_8100_0000] {
    ///     let mut pc = SampleRecordPc::default();
    ///     pc.set_ip(ip);
    ///     data.add(&pc.to_bytes())?;
    ///     data.add(&0u64.to_le_bytes())?; // the TSC the legacy descriptor has
    /// }
    /// data.done()?;
    /// stream.finish()?;
    /// w.close()?;
    ///
    /// let file = Tb5File::open(&path)?;
    /// let ips: Vec<u64> = file.stream(0)?.legacy_samples()?.map(|s| s.pc.ip()).collect();
    /// assert_eq!(ips, [0x7f3a_1c01_2345, 0xffff_ffff_8100_0000]);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn set_ip(&mut self, ip: u64) {
        self.set_ia64(ip, 0);
    }
    /// Sets `eip`, `eflags` and `csd` and clears the `IA64PC` bit.
    pub fn set_ia32(&mut self, eip: u32, eflags: u32, csd: CodeDescriptor) {
        self.word0 = u64::from(eip) | (u64::from(eflags) << 32);
        self.word1 = u64::from(csd.low_word) | (u64::from(csd.high_word) << 32);
        set_bits(&mut self.bit_fields2, 29, 1, 0);
    }
    /// Sets `cpuNum` (truncated to 12 bits).
    pub fn set_cpu_num(&mut self, cpu: u16) {
        self.cpu_and_os = (self.cpu_and_os & !0xFFF) | (cpu & 0xFFF);
    }
    /// Sets `notVmid0`.
    pub fn set_not_vmid0(&mut self, v: bool) {
        self.cpu_and_os = (self.cpu_and_os & !0x1000) | (u16::from(v) << 12);
    }
    /// Sets `codeMode` (truncated to 2 bits).
    pub fn set_code_mode(&mut self, mode: u8) {
        self.cpu_and_os = (self.cpu_and_os & !0x6000) | ((u16::from(mode) & 0x3) << 13);
    }
    /// Sets `mrIndex` (truncated to 20 bits).
    pub fn set_mr_index(&mut self, v: u32) {
        set_bits(&mut self.bit_fields2, 0, 20, v);
    }
    /// Sets `eventIndex`.
    pub fn set_event_index(&mut self, v: u8) {
        set_bits(&mut self.bit_fields2, 20, 8, u32::from(v));
    }
    /// Sets `tidIsRaw`.
    pub fn set_tid_is_raw(&mut self, v: bool) {
        set_bits(&mut self.bit_fields2, 28, 1, u32::from(v));
    }
    /// Sets `pidRecIndexRaw`.
    pub fn set_pid_rec_index_raw(&mut self, v: bool) {
        set_bits(&mut self.bit_fields2, 30, 1, u32::from(v));
    }
    /// Sets `mrIndexNone`.
    pub fn set_mr_index_none(&mut self, v: bool) {
        set_bits(&mut self.bit_fields2, 31, 1, u32::from(v));
    }
}

/// One legacy sample as read from stream 0: the PC record and, when the
/// descriptor has an `ST_TIME_STAMP`/`SST_TSC` field, its TSC.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LegacySample {
    /// The `TBRW_SampleRecordPC`.
    pub pc: SampleRecordPc,
    /// The `TBRW_SampleRecordTSC` value.
    pub tsc: Option<u64>,
}

impl LegacySample {
    /// Decodes the sample of one data record whose PC record starts at byte
    /// `pc` and whose 8-byte TSC, if the layout has one, at byte `tsc`.
    /// `None` when the record is too short for the PC record; a TSC that
    /// does not fit is `None`.
    #[inline]
    pub fn from_record(record: &[u8], pc: usize, tsc: Option<usize>) -> Option<LegacySample> {
        let pc = SampleRecordPc::from_slice(record.get(pc..)?)?;
        let tsc = tsc
            .and_then(|t| record.get(t..t.checked_add(8)?))
            .map(|b| u64::from_le_bytes(b.try_into().unwrap_or_default()));
        Some(LegacySample { pc, tsc })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bit_fields_match_the_c_layout() {
        let mut s = SampleRecordPc::default();
        s.set_mr_index(0xABCDE);
        s.set_event_index(0x5A);
        s.set_tid_is_raw(true);
        s.set_pid_rec_index_raw(true);
        s.set_mr_index_none(true);
        s.set_cpu_num(0xFFF);
        s.set_code_mode(3);
        assert_eq!(s.bit_fields2, 0xABCDE | (0x5A << 20) | (1 << 28) | (1 << 30) | (1 << 31));
        assert_eq!(s.cpu_and_os, 0xFFF | (3 << 13));
        assert_eq!((s.mr_index(), s.event_index(), s.code_mode(), s.cpu_num()), (0xABCDE, 0x5A, 3, 0xFFF));
        assert!(!s.ia64_pc() && !s.not_vmid0());

        s.set_ia32(0x617000, 0x246, CodeDescriptor { low_word: 0xffff, high_word: 0xcf9b00 });
        assert_eq!((s.ip(), s.eflags()), (0x617000, 0x246));
        let csd = s.csd();
        assert_eq!((csd.limit(), csd.base(), csd.dpl(), csd.present(), csd.granularity()), (0xFFFFF, 0, 0, true, true));
        s.set_ia64(0xFFFF_0000_1234_5678, 7);
        assert!(s.ia64_pc());
        assert_eq!(s.ip(), 0xFFFF_0000_1234_5678);
        assert_eq!(SampleRecordPc::from_bytes(&s.to_bytes()), s);
    }

    #[test]
    fn a_record_decodes_into_its_pc_and_tsc() {
        let mut pc = SampleRecordPc::default();
        pc.set_ia32(0x1234, 0, CodeDescriptor::default());
        let mut rec = vec![0xEEu8; 4];
        rec.extend_from_slice(&pc.to_bytes());
        rec.extend_from_slice(&77u64.to_le_bytes());
        assert_eq!(LegacySample::from_record(&rec, 4, Some(36)), Some(LegacySample { pc, tsc: Some(77) }));
        assert_eq!(LegacySample::from_record(&rec, 4, Some(37)).map(|s| s.tsc), Some(None));
        assert_eq!(LegacySample::from_record(&rec, 20, None), None);
    }
}
