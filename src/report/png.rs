//! PNG images of the SVG charts (`sysperf plot -o FILE.png`), rasterized in pure Rust by resvg
//! at twice the SVG's size so they stay sharp in print and on dense screens.
//!
//! Not a pure function like the other renderers: text needs fonts, and those come from the
//! system ([`system_fonts`]). Without any font the image is still made, without its text, and
//! the caller is told so it can say what to install. Not a general SVG tool: it renders what
//! `svg` draws.

use resvg::tiny_skia;
use resvg::usvg::{self, fontdb};
use std::sync::Arc;
use thiserror::Error;

/// Pixels per SVG unit.
pub const SCALE: f32 = 2.0;

/// Most pixels a PNG may have: 40 million (e.g. 2000 x 20,000), 160 MB while it is drawn.
/// A taller figure (hundreds of runs or tests in one plot) is refused before any of it is
/// allocated; its SVG has no such limit.
pub const MAX_PIXELS: u64 = 40_000_000;

#[derive(Debug, Error)]
pub enum PngError {
    #[error("the chart is not valid SVG ({0}); this is a bug in sysperf, please report it")]
    Svg(String),
    #[error("a {width}x{height} image is too large to draw; plot fewer runs or tests")]
    Size { width: f32, height: f32 },
    #[error("the PNG would be {width}x{height} pixels, more than the {MAX_PIXELS} sysperf draws; plot fewer runs or tests, or write .svg")]
    TooManyPixels { width: u32, height: u32 },
    #[error("encoding the PNG failed: {0}")]
    Encode(String),
}

impl PngError {
    /// True for a figure too large to draw, which the CLI maps to exit code 2.
    pub fn is_user_error(&self) -> bool {
        matches!(self, PngError::Size { .. } | PngError::TooManyPixels { .. })
    }
}

impl crate::error::Exit for PngError {
    fn exit_code(&self) -> i32 {
        crate::error::usage_if(self.is_user_error())
    }
}

/// An encoded image and what it was drawn with.
#[derive(Debug)]
pub struct Png {
    pub bytes: Vec<u8>,
    pub width: u32,
    pub height: u32,
    /// False when no font was available, so the image has no text.
    pub has_text: bool,
}

/// The system's fonts, with the generic sans-serif family pointed at one that exists: the
/// charts ask for DejaVu Sans and fall back to sans-serif, which fontdb maps to Arial unless
/// told otherwise, and Arial is rarely installed on Linux.
pub fn system_fonts() -> Arc<fontdb::Database> {
    let mut db = fontdb::Database::new();
    db.load_system_fonts();
    let has = |db: &fontdb::Database, name: &str| {
        db.faces()
            .any(|f| f.families.iter().any(|(n, _)| n.as_str() == name))
    };
    let preferred = ["DejaVu Sans", "Liberation Sans", "Noto Sans", "FreeSans"]
        .into_iter()
        .find(|n| has(&db, n))
        .map(str::to_string)
        .or_else(|| {
            db.faces()
                .find_map(|f| f.families.first().map(|(n, _)| n.clone()))
        });
    if let Some(name) = preferred {
        db.set_sans_serif_family(name);
    }
    Arc::new(db)
}

/// Rasterizes `svg` at [`SCALE`] on a white background.
pub fn render(svg: &str, fonts: Arc<fontdb::Database>) -> Result<Png, PngError> {
    let has_text = !fonts.is_empty();
    let opt = usvg::Options {
        fontdb: fonts,
        ..usvg::Options::default()
    };
    let tree = usvg::Tree::from_str(svg, &opt).map_err(|e| PngError::Svg(e.to_string()))?;
    let size = tree.size();
    let too_big = || PngError::Size {
        width: size.width() * SCALE,
        height: size.height() * SCALE,
    };
    let px = size.to_int_size().scale_by(SCALE).ok_or_else(too_big)?;
    if u64::from(px.width()) * u64::from(px.height()) > MAX_PIXELS {
        return Err(PngError::TooManyPixels {
            width: px.width(),
            height: px.height(),
        });
    }
    let mut pixmap = tiny_skia::Pixmap::new(px.width(), px.height()).ok_or_else(too_big)?;
    pixmap.fill(tiny_skia::Color::WHITE);
    resvg::render(
        &tree,
        tiny_skia::Transform::from_scale(SCALE, SCALE),
        &mut pixmap.as_mut(),
    );
    let bytes = pixmap
        .encode_png()
        .map_err(|e| PngError::Encode(e.to_string()))?;
    Ok(Png {
        bytes,
        width: px.width(),
        height: px.height(),
        has_text,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn renders_at_twice_the_size_even_without_fonts() {
        let c = crate::compare::build(&[crate::report::fixture_run()], 0, 2.0);
        let svg = crate::report::svg::test_chart(&c, "syscall").unwrap();
        let png = render(&svg.document(), Arc::new(fontdb::Database::new())).unwrap();
        assert!(!png.has_text);
        assert_eq!(png.width, (svg.width * 2.0).round() as u32);
        assert_eq!(png.height, (svg.height * 2.0).round() as u32);
        assert_eq!(&png.bytes[..8], b"\x89PNG\r\n\x1a\n");
    }

    #[test]
    fn a_figure_of_too_many_pixels_is_refused_before_drawing() {
        // The size of a plot of hundreds of runs (2000 x 520,224 pixels, 4 GB to draw).
        let svg = r#"<svg xmlns="http://www.w3.org/2000/svg" width="1000" height="260112"><rect width="1" height="1"/></svg>"#;
        let e = render(svg, Arc::new(fontdb::Database::new())).unwrap_err();
        assert!(e.is_user_error());
        assert!(
            e.to_string()
                .contains("2000x520224 pixels, more than the 40000000 sysperf draws"),
            "{e}"
        );
    }

    #[test]
    fn bad_svg_is_an_error_not_a_panic() {
        let e = render("<svg", Arc::new(fontdb::Database::new())).unwrap_err();
        assert!(e.to_string().contains("not valid SVG"), "{e}");
    }
}
