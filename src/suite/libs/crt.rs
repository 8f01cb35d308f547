//! The `libs` suite's C run-time routines (§4.2.5, Feder §V.1-3): glibc's memcpy, strlen and
//! strcpy against the string's size, malloc/free of power-of-two sizes, and the conversions
//! atoi, strtod, printf("%d") and printf("%f") (as snprintf, so that nothing is printed).
//! Every call goes to the C library through src/clib.rs; results pass through black_box so
//! that no call can be dropped.

use crate::bench::{Benchmark, Ctx};
use crate::clib;
use crate::error::BenchError;
use std::ffi::CString;
use std::hint::black_box;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StrOp {
    Memcpy,
    Strlen,
    Strcpy,
}

pub struct Strings {
    op: StrOp,
    size: usize,
    src: CString,
    dst: Vec<u8>,
    /// Where in `dst` the copies go: [`DST_DISTANCE`] bytes from the source modulo a page.
    off: usize,
}

/// The distance of the destination from the source modulo 4 KiB. A destination a few bytes
/// after the source modulo 4 KiB (where two malloc'd buffers of one size land) makes glibc's
/// memcpy (rep movsb) some hundred times slower on x86 ("4K aliasing"); half a page away
/// measures the routine, not that accident.
pub const DST_DISTANCE: usize = 2048;

impl Strings {
    pub fn new(op: StrOp, size: usize) -> Strings {
        Strings {
            op,
            size: size.max(1),
            src: CString::default(),
            dst: Vec::new(),
            off: 0,
        }
    }
}

impl Benchmark for Strings {
    fn setup(&mut self, _: &Ctx, _: u64) -> Result<(), BenchError> {
        self.src = CString::new(vec![b'a'; self.size])
            .map_err(|_| BenchError::Protocol("NUL in the string".into()))?;
        self.dst = vec![0u8; self.size + 1 + 4096];
        let (src, dst) = (self.src.as_ptr() as usize, self.dst.as_ptr() as usize);
        self.off = (src + DST_DISTANCE).wrapping_sub(dst) % 4096;
        Ok(())
    }

    fn run(&mut self, iterations: u64) -> Result<(), BenchError> {
        let dst = &mut self.dst[self.off..self.off + self.size + 1];
        match self.op {
            StrOp::Memcpy => {
                let src = self.src.to_bytes();
                for _ in 0..iterations {
                    clib::memcpy(black_box(&mut *dst), black_box(src));
                }
            }
            StrOp::Strlen => {
                for _ in 0..iterations {
                    if black_box(clib::strlen(black_box(self.src.as_c_str()))) != self.size {
                        return Err(BenchError::Protocol("strlen: wrong length".into()));
                    }
                }
            }
            StrOp::Strcpy => {
                for _ in 0..iterations {
                    clib::strcpy(black_box(&mut *dst), black_box(&self.src));
                }
            }
        }
        if self.op != StrOp::Strlen && dst[..self.size] != *self.src.to_bytes() {
            return Err(BenchError::Protocol(format!("{:?}: copy differs", self.op)));
        }
        Ok(())
    }
}

/// malloc(size) and free of a power-of-two size.
pub struct Malloc {
    size: usize,
}

impl Malloc {
    pub fn new(size: usize) -> Malloc {
        Malloc { size }
    }
}

impl Benchmark for Malloc {
    fn setup(&mut self, _: &Ctx, _: u64) -> Result<(), BenchError> {
        Ok(())
    }

    fn run(&mut self, iterations: u64) -> Result<(), BenchError> {
        for _ in 0..iterations {
            if !clib::malloc_free(black_box(self.size)) {
                return Err(BenchError::Protocol(format!(
                    "malloc({}) returned NULL",
                    self.size
                )));
            }
        }
        Ok(())
    }
}

/// The bytes malloc wastes for a request of `size`: what it reserves (usable size and chunk
/// header) less the request, as a percentage of the request.
pub fn malloc_waste_percent(size: usize) -> Option<f64> {
    clib::malloc_reserved(size).map(|r| (r as f64 - size as f64) * 100.0 / size.max(1) as f64)
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Conv {
    Atoi,
    Strtod,
    PrintfD,
    PrintfF,
}

pub struct Convert {
    conv: Conv,
    buf: [u8; 64],
}

impl Convert {
    pub fn new(conv: Conv) -> Convert {
        Convert { conv, buf: [0; 64] }
    }
}

impl Benchmark for Convert {
    fn setup(&mut self, _: &Ctx, _: u64) -> Result<(), BenchError> {
        Ok(())
    }

    fn run(&mut self, iterations: u64) -> Result<(), BenchError> {
        let ok = match self.conv {
            Conv::Atoi => (0..iterations).all(|_| clib::atoi(black_box(c"123456789")) == 123456789),
            Conv::Strtod => (0..iterations)
                .all(|_| (clib::strtod(black_box(c"1234.5678")) - 1234.5678).abs() < 1e-12),
            Conv::PrintfD => {
                (0..iterations).all(|_| clib::format_int(&mut self.buf, black_box(123456789)) == 9)
            }
            Conv::PrintfF => (0..iterations)
                .all(|_| clib::format_double(&mut self.buf, black_box(1234.5678)) == 11),
        };
        if !ok {
            return Err(BenchError::Protocol(format!(
                "{:?}: wrong result",
                self.conv
            )));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn copies_land_half_a_page_from_the_source_and_are_checked() {
        let ctx = crate::bench::Ctx {
            placement: crate::bench::Placement::Inherit,
            ..Default::default()
        };
        for op in [StrOp::Memcpy, StrOp::Strcpy, StrOp::Strlen] {
            for size in [1, 100, 4096, 65536] {
                let mut b = Strings::new(op, size);
                b.setup(&ctx, 1).unwrap();
                b.run(3).unwrap();
                let (src, dst) = (b.src.as_ptr() as usize, b.dst.as_ptr() as usize + b.off);
                assert_eq!(dst.wrapping_sub(src) % 4096, DST_DISTANCE, "{op:?} {size}");
                if op != StrOp::Strlen {
                    assert_eq!(&b.dst[b.off..b.off + size], b.src.to_bytes());
                }
            }
        }
    }
}
