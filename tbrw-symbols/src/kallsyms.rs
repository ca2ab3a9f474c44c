//! Kernel text symbols from `/proc/kallsyms` (or a saved copy): parsed once,
//! sorted, looked up as the nearest preceding symbol (kallsyms has no sizes).

use std::sync::Arc;

/// Sorted kernel text symbols.
pub(crate) struct Kallsyms {
    addrs: Vec<u64>,
    names: Vec<Arc<str>>,
}

impl Kallsyms {
    /// Parses kallsyms text: `address type name [module]` per line. Only
    /// text symbols (`t`, `T`, `w`, `W`) are kept. `Err` when nothing usable
    /// is left, notably when every address reads 0 (`kptr_restrict`).
    pub(crate) fn parse(text: &str) -> Result<Kallsyms, String> {
        let mut syms: Vec<(u64, &str, Option<&str>)> = Vec::new();
        let mut hidden = false;
        for line in text.lines() {
            let mut fields = line.split_whitespace();
            let (Some(addr), Some(kind), Some(name)) = (fields.next(), fields.next(), fields.next()) else {
                continue;
            };
            if !matches!(kind, "t" | "T" | "w" | "W") {
                continue;
            }
            let Ok(addr) = u64::from_str_radix(addr, 16) else { continue };
            if addr == 0 {
                hidden = true;
                continue;
            }
            let module = fields.next().map(|m| m.trim_start_matches('[').trim_end_matches(']'));
            syms.push((addr, name, module));
        }
        if syms.is_empty() {
            return Err(if hidden {
                "kallsyms addresses are hidden (kernel.kptr_restrict; run as root or lower it)".into()
            } else {
                "kallsyms lists no text symbols".into()
            });
        }
        // Of the names at one address (`memcpy`, `__memcpy`, `__pi_memcpy`)
        // perf keeps the last one listed: kallsyms has no sizes, so perf
        // sizes each symbol up to the next address, which leaves the
        // earlier aliases empty, and it prefers a sized symbol. The sort is
        // stable; reversed, the last listed comes first and stays.
        syms.sort_by_key(|s| s.0);
        syms.reverse();
        syms.dedup_by_key(|s| s.0);
        syms.reverse();
        let addrs = syms.iter().map(|s| s.0).collect();
        let names = syms
            .iter()
            .map(|&(_, name, module)| match module {
                Some(m) => Arc::from(format!("{name} [{m}]")),
                None => Arc::from(name),
            })
            .collect();
        Ok(Kallsyms { addrs, names })
    }

    /// The symbol at or before `pc`, with the offset from it.
    pub(crate) fn lookup(&self, pc: u64) -> Option<(Arc<str>, u64)> {
        let i = self.addrs.partition_point(|&a| a <= pc).checked_sub(1)?;
        Some((self.names[i].clone(), pc - self.addrs[i]))
    }

    /// Number of symbols.
    pub(crate) fn len(&self) -> usize {
        self.addrs.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parse_and_lookup() {
        let k = Kallsyms::parse(
            "ffffffff81000000 T _stext\n\
             ffffffff81000100 t do_one\n\
             ffffffff82000000 D some_data\n\
             garbage line\n\
             ffffffffc0001000 t ext4_thing\t[ext4]\n",
        )
        .unwrap();
        assert_eq!(k.len(), 3);
        assert_eq!(k.lookup(0xffffffff81000104), Some(("do_one".into(), 4)));
        assert_eq!(k.lookup(0xffffffffc0001010), Some(("ext4_thing [ext4]".into(), 0x10)));
        assert_eq!(k.lookup(0x1000), None);
    }

    #[test]
    fn of_aliases_the_last_listed_is_kept_as_perf_keeps_it() {
        let k = Kallsyms::parse(
            "ffffffff821f64a0 T memcpy\n\
             ffffffff821f64a0 T __memcpy\n\
             ffffffff821f64a0 T __pi_memcpy\n\
             ffffffff821f6500 T memset\n",
        )
        .unwrap();
        assert_eq!(k.len(), 2);
        assert_eq!(k.lookup(0xffffffff821f64a8), Some(("__pi_memcpy".into(), 8)));
        assert_eq!(k.lookup(0xffffffff821f6500), Some(("memset".into(), 0)));
    }

    #[test]
    fn hidden_addresses_are_an_error() {
        let err = Kallsyms::parse("0000000000000000 T _stext\n0000000000000000 t x\n").err().unwrap();
        assert!(err.contains("hidden"), "{err}");
        assert!(Kallsyms::parse("").is_err());
    }
}
