//! The PMU value taken with every sample (`-p`): none, RAPL power, an
//! hwmon sensor, a number in a file, or a constant for tests. What the
//! value measures follows the seed's profile magic: custom, current,
//! voltage or power.

use std::fmt;
use std::path::{Path, PathBuf};

/// What a PMU value measures (the profile magic: 0, 1, 2, 3).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    /// 0: a value of its own unit.
    Custom,
    /// 1: current, amperes.
    Current,
    /// 2: voltage, volts.
    Voltage,
    /// 3: power, watts.
    Power,
}

impl Kind {
    /// The profile magic.
    pub fn magic(self) -> u32 {
        match self {
            Kind::Custom => 0,
            Kind::Current => 1,
            Kind::Voltage => 2,
            Kind::Power => 3,
        }
    }

    /// Its name: `custom`, `current`, `voltage`, `power`.
    pub fn name(self) -> &'static str {
        match self {
            Kind::Custom => "custom",
            Kind::Current => "current",
            Kind::Voltage => "voltage",
            Kind::Power => "power",
        }
    }
}

/// A PMU source that cannot be used, with what can.
#[derive(Debug)]
pub struct PmuError(pub String);

impl fmt::Display for PmuError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for PmuError {}

#[derive(Debug)]
enum Source {
    Rapl { files: Vec<(PathBuf, u64)>, last: Option<(u64, u64)> },
    Hwmon { file: PathBuf, scale: f64 },
    File(PathBuf),
    Dummy,
}

/// An open PMU source.
#[derive(Debug)]
pub struct Pmu {
    source: Source,
    kind: Kind,
    /// What `-p` said, for the file's description.
    pub spec: String,
}

const POWERCAP: &str = "/sys/class/powercap";
const HWMON: &str = "/sys/class/hwmon";

/// Value of the dummy source.
pub const DUMMY_VALUE: f64 = 1.0;

impl Pmu {
    /// Opens the source `-p` names; `Ok(None)` for `none`.
    pub fn open(spec: &str) -> Result<Option<Pmu>, PmuError> {
        let (source, kind) = match spec.split_once(':').map_or((spec, None), |(a, b)| (a, Some(b))) {
            ("none", None) => return Ok(None),
            ("dummy", None) => (Source::Dummy, Kind::Custom),
            ("rapl", None) => {
                let files =
                    rapl_packages(Path::new(POWERCAP)).map_err(|e| PmuError(format!("{e}{}", available_hint())))?;
                (Source::Rapl { files, last: None }, Kind::Power)
            }
            ("file", Some(p)) => {
                let path = PathBuf::from(p);
                read_number(&path).map_err(|e| PmuError(format!("-p file:{p}: {e}")))?;
                (Source::File(path), Kind::Custom)
            }
            ("hwmon", Some(s)) => {
                let (file, kind, scale) = hwmon_sensor(Path::new(HWMON), s)?;
                (Source::Hwmon { file, scale }, kind)
            }
            _ => {
                return Err(PmuError(format!(
                    "-p {spec}: unknown PMU source; one of none, dummy, rapl, hwmon:<sensor>, file:<path>{}",
                    available_hint()
                )))
            }
        };
        let mut pmu = Pmu { source, kind, spec: spec.to_owned() };
        // A first reading primes RAPL's difference and proves the source works.
        pmu.read().map_err(|e| PmuError(format!("-p {spec}: {e}")))?;
        Ok(Some(pmu))
    }

    /// What the values measure.
    pub fn kind(&self) -> Kind {
        self.kind
    }

    /// Takes one reading. RAPL gives the mean power since the previous
    /// reading (0 for the first).
    pub fn read(&mut self) -> Result<f64, String> {
        match &mut self.source {
            Source::Dummy => Ok(DUMMY_VALUE),
            Source::File(p) => read_number(p),
            Source::Hwmon { file, scale } => Ok(read_number(file)? * *scale),
            Source::Rapl { files, last } => {
                let mut energy = 0u64;
                for (f, range) in files.iter() {
                    let e = read_number(f)? as u64;
                    energy = energy.wrapping_add(e % range.max(&1));
                }
                let now = crate::sys::monotonic_raw_ns();
                let watts = match *last {
                    Some((e0, t0)) if now > t0 => {
                        let ranges: u64 = files.iter().map(|(_, r)| *r).sum();
                        // A counter that wrapped adds its range back.
                        let de = if energy >= e0 { energy - e0 } else { energy + ranges - e0 };
                        de as f64 * 1e-6 / ((now - t0) as f64 * 1e-9)
                    }
                    _ => 0.0,
                };
                *last = Some((energy, now));
                Ok(watts)
            }
        }
    }
}

fn read_number(p: &Path) -> Result<f64, String> {
    let s = std::fs::read_to_string(p).map_err(|e| format!("{}: {e}", p.display()))?;
    s.trim().parse::<f64>().map_err(|_| format!("{}: {:?} is not a number", p.display(), s.trim()))
}

/// The package energy counters of RAPL (`intel-rapl:N/energy_uj`) with
/// their wrap-around ranges.
fn rapl_packages(root: &Path) -> Result<Vec<(PathBuf, u64)>, PmuError> {
    let mut out = Vec::new();
    if let Ok(dir) = std::fs::read_dir(root) {
        for e in dir.flatten() {
            let name = e.file_name().to_string_lossy().into_owned();
            // Packages only (intel-rapl:0), not their sub-domains (intel-rapl:0:0).
            if name.starts_with("intel-rapl:") && name.matches(':').count() == 1 {
                let f = e.path().join("energy_uj");
                if read_number(&f).is_ok() {
                    let range = read_number(&e.path().join("max_energy_range_uj")).map_or(u64::MAX, |v| v as u64);
                    out.push((f, range));
                }
            }
        }
    }
    out.sort();
    if out.is_empty() {
        return Err(PmuError(format!(
            "-p rapl: no readable RAPL package counter under {} (no intel-rapl:N/energy_uj; reading it may need root)",
            root.display()
        )));
    }
    Ok(out)
}

/// Every `<chip>/<file>` sensor under `root` (hwmon), with its kind.
fn hwmon_sensors(root: &Path) -> Vec<(String, PathBuf, Kind, f64)> {
    let mut out = Vec::new();
    let Ok(dir) = std::fs::read_dir(root) else { return out };
    for chip in dir.flatten() {
        let chip_name = std::fs::read_to_string(chip.path().join("name"))
            .map(|s| s.trim().to_owned())
            .unwrap_or_else(|_| chip.file_name().to_string_lossy().into_owned());
        let Ok(files) = std::fs::read_dir(chip.path()) else { continue };
        for f in files.flatten() {
            let n = f.file_name().to_string_lossy().into_owned();
            if !n.ends_with("_input") {
                continue;
            }
            // hwmon units: mA, mV, µW; anything else is kept raw.
            let (kind, scale) = if n.starts_with("curr") {
                (Kind::Current, 1e-3)
            } else if n.starts_with("in") {
                (Kind::Voltage, 1e-3)
            } else if n.starts_with("power") {
                (Kind::Power, 1e-6)
            } else {
                (Kind::Custom, 1.0)
            };
            out.push((format!("{chip_name}/{n}"), f.path(), kind, scale));
        }
    }
    out.sort_by(|a, b| a.0.cmp(&b.0));
    out
}

fn hwmon_sensor(root: &Path, name: &str) -> Result<(PathBuf, Kind, f64), PmuError> {
    let sensors = hwmon_sensors(root);
    sensors.iter().find(|s| s.0 == name || s.1 == Path::new(name)).map(|s| (s.1.clone(), s.2, s.3)).ok_or_else(|| {
        PmuError(format!("-p hwmon:{name}: no such sensor (give <chip>/<file>_input){}", available_hint()))
    })
}

/// The sources this machine has, for error messages.
pub fn available() -> Vec<String> {
    let mut v = vec!["none".to_owned(), "dummy".to_owned(), "file:<path>".to_owned()];
    if rapl_packages(Path::new(POWERCAP)).is_ok() {
        v.push("rapl".into());
    }
    v.extend(hwmon_sensors(Path::new(HWMON)).into_iter().map(|s| format!("hwmon:{}", s.0)));
    v
}

fn available_hint() -> String {
    format!(". Available here: {}", available().join(", "))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sources_open_or_say_what_is_there() {
        assert!(Pmu::open("none").unwrap().is_none());
        let mut d = Pmu::open("dummy").unwrap().unwrap();
        assert_eq!((d.read().unwrap(), d.kind()), (DUMMY_VALUE, Kind::Custom));
        let err = Pmu::open("bogus").unwrap_err().0;
        assert!(err.contains("Available here: none, dummy, file:<path>"), "{err}");
        let err = Pmu::open("hwmon:nope/x_input").unwrap_err().0;
        assert!(err.contains("no such sensor"), "{err}");
        let dir = tempfile::tempdir().unwrap();
        let f = dir.path().join("v");
        std::fs::write(&f, "2.5\n").unwrap();
        let mut p = Pmu::open(&format!("file:{}", f.display())).unwrap().unwrap();
        assert_eq!(p.read().unwrap(), 2.5);
        std::fs::write(&f, "x").unwrap();
        assert!(p.read().is_err());
        assert!(Pmu::open(&format!("file:{}", dir.path().join("none").display())).is_err());
    }

    #[test]
    fn rapl_and_hwmon_from_a_fake_tree() {
        let dir = tempfile::tempdir().unwrap();
        let pkg = dir.path().join("intel-rapl:0");
        std::fs::create_dir_all(pkg.join("intel-rapl:0:0")).unwrap();
        std::fs::write(pkg.join("energy_uj"), "1000").unwrap();
        std::fs::write(pkg.join("max_energy_range_uj"), "5000").unwrap();
        assert_eq!(rapl_packages(dir.path()).unwrap(), vec![(pkg.join("energy_uj"), 5000)]);
        let hw = dir.path().join("hwmon0");
        std::fs::create_dir_all(&hw).unwrap();
        std::fs::write(hw.join("name"), "ina\n").unwrap();
        std::fs::write(hw.join("curr1_input"), "1500").unwrap();
        std::fs::write(hw.join("power1_input"), "2000000").unwrap();
        let (f, k, s) = hwmon_sensor(dir.path(), "ina/curr1_input").unwrap();
        assert_eq!((k, read_number(&f).unwrap() * s), (Kind::Current, 1.5));
        let (_, k, s) = hwmon_sensor(dir.path(), "ina/power1_input").unwrap();
        assert_eq!((k, s), (Kind::Power, 1e-6));
    }
}
