//! The `format` results: a human table, then one JSON line per case.

use crate::block_count;
use crate::json::JsonLine;
use crate::mmap_view;
use crate::stats::mib;
use crate::throughput::{self, Layout};

/// Everything one `format` run measured.
#[derive(Debug, Default)]
pub struct FormatReport {
    pub header: Vec<String>,
    pub throughput: Vec<throughput::Row>,
    pub blocks: Vec<block_count::Row>,
    pub mmap: Option<mmap_view::Report>,
}

impl FormatReport {
    /// Print the table, then the JSON lines, to stdout.
    pub fn print(&self) {
        for line in self.table() {
            println!("{line}");
        }
        println!();
        for line in self.json_lines() {
            println!("{line}");
        }
    }

    fn table(&self) -> Vec<String> {
        let mut out = self.header.clone();
        out.push(String::new());
        out.push(format!(
            "{:<8} {:<11} {:<8} {:<6} {:>5} {:>9} {:>26} {:>17} {:>6} {:>7} {:>10} {:>7}",
            "workload",
            "op",
            "layout",
            "codec",
            "files",
            "MiB",
            "MB/s median [min-max]",
            "vs plain",
            "best",
            "fsync s",
            "out MiB",
            "out/in"
        ));
        for r in &self.throughput {
            let ratio = r
                .ratio_vs_plain
                .map_or_else(|| "-".to_owned(), |s| format!("{}x", s.show(2)));
            out.push(format!(
                "{:<8} {:<11} {:<8} {:<6} {:>5} {:>9.1} {:>26} {:>17} {:>6} {:>7} {:>10.1} {:>7.3}",
                r.workload,
                r.op,
                r.layout.name(),
                r.codec,
                r.files,
                mib(r.bytes),
                r.mb_s.show(0),
                ratio,
                r.ratio_best
                    .map_or_else(|| "-".to_owned(), |b| format!("{b:.2}x")),
                r.fsync_s
                    .map_or_else(|| "-".to_owned(), |s| format!("{:.2}", s.median)),
                mib(r.output_bytes),
                r.output_bytes as f64 / r.bytes.max(1) as f64,
            ));
        }
        for r in self
            .throughput
            .iter()
            .filter(|r| r.op == "write" && r.codec == "none")
        {
            if let (Some(s), Some(b)) = (r.ratio_vs_plain, r.ratio_best) {
                let verdict = |x: f64| if x >= 0.9 { "met" } else { "NOT met" };
                out.push(format!(
                    "{} write, codec none, {}: {:.2}x plain median of per-rep ratios ({}), {:.2}x best vs best ({}); target >= 0.90x",
                    r.workload,
                    r.layout.name(),
                    s.median,
                    verdict(s.median),
                    b,
                    verdict(b)
                ));
            }
        }

        if !self.blocks.is_empty() {
            out.push(String::new());
            out.push(format!(
                "{:>7} {:>10} {:>22} {:>28}",
                "blocks", "file KiB", "open us mean (p50)", "read one 4 KiB block us"
            ));
            for b in &self.blocks {
                out.push(format!(
                    "{:>7} {:>10.0} {:>22} {:>28}",
                    b.blocks,
                    b.file_bytes as f64 / 1024.0,
                    format!("{:.1} ({:.1})", b.open_us_mean, b.open_us_p50),
                    format!("{:.2} ({:.2})", b.read_one_us_mean, b.read_one_us_p50),
                ));
            }
            if let (Some(first), Some(last)) = (self.blocks.first(), self.blocks.last()) {
                out.push(format!(
                    "{} vs {} blocks: open {:.1}x, read one block {:.2}x (p50 {:.2}x)",
                    last.blocks,
                    first.blocks,
                    last.open_us_mean / first.open_us_mean,
                    last.read_one_us_mean / first.read_one_us_mean,
                    last.read_one_us_p50 / first.read_one_us_p50
                ));
            }
        }

        if let Some(m) = &self.mmap {
            out.push(String::new());
            out.push(format!(
                "mmap view: {:.3} us for {:.1} MiB (no copy)  [`{}`: first view {:.1} us, mean of {} views; MappedShard::open {:.1} us]",
                m.view_mean_us,
                mib(m.block_bytes),
                m.block,
                m.view_first_us,
                m.views,
                m.open_us
            ));
            out.push(format!(
                "  view::<f32>(`{}`): {} values, pointer inside the map; contrast on the same {:.1} MiB block: view_verified (CRC of every page) {:.1} ms, read_block (copy) {:.1} ms",
                m.view_f32_block,
                m.view_f32_len,
                mib(m.block_bytes),
                m.view_verified_us / 1e3,
                m.read_block_us / 1e3
            ));
        }
        out
    }

    fn json_lines(&self) -> Vec<String> {
        let mut out = Vec::new();
        for r in &self.throughput {
            let layout = r.layout.name();
            let codec = if r.layout == Layout::Plain {
                "none"
            } else {
                r.codec
            };
            out.push(
                JsonLine::new()
                    .str("bench", "format")
                    .str(
                        "case",
                        &format!("{}/{}/{}/{}", r.workload, r.op, layout, r.codec),
                    )
                    .str("workload", r.workload)
                    .str("op", r.op)
                    .str("layout", layout)
                    .str("codec", codec)
                    .int("files", r.files as u64)
                    .int("reps", r.mb_s.n as u64)
                    .int("bytes", r.bytes)
                    .num("mb_s", r.mb_s.median)
                    .num("mb_s_min", r.mb_s.min)
                    .num("mb_s_max", r.mb_s.max)
                    .opt_num("ratio_vs_plain", r.ratio_vs_plain.map(|s| s.median))
                    .opt_num("ratio_best_vs_plain", r.ratio_best)
                    .opt_num("fsync_s", r.fsync_s.map(|s| s.median))
                    .int("output_bytes", r.output_bytes)
                    .render(),
            );
        }
        for b in &self.blocks {
            out.push(
                JsonLine::new()
                    .str("bench", "format")
                    .str("case", &format!("blocks/{}", b.blocks))
                    .str("op", "open+read_one_block")
                    .str("codec", "none")
                    .int("blocks", b.blocks as u64)
                    .int("bytes", block_count::BLOCK_BYTES as u64)
                    .num("mb_s", f64::NAN)
                    .num("ratio_vs_plain", f64::NAN)
                    .int("output_bytes", b.file_bytes)
                    .num("open_us", b.open_us_mean)
                    .num("open_us_p50", b.open_us_p50)
                    .int("open_reps", b.open_reps as u64)
                    .num("read_one_us", b.read_one_us_mean)
                    .num("read_one_us_p50", b.read_one_us_p50)
                    .int("read_reps", b.read_reps as u64)
                    .render(),
            );
        }
        if let Some(m) = &self.mmap {
            out.push(
                JsonLine::new()
                    .str("bench", "format")
                    .str("case", &format!("mmap_view/{}", m.block))
                    .str("op", "mmap_view")
                    .str("codec", "none")
                    .int("bytes", m.block_bytes)
                    .num("mb_s", f64::NAN)
                    .num("ratio_vs_plain", f64::NAN)
                    .int("output_bytes", m.file_bytes)
                    .num("open_us", m.open_us)
                    .num("view_first_us", m.view_first_us)
                    .num("view_us", m.view_mean_us)
                    .int("views", u64::from(m.views))
                    .str("zero_copy", "pointer inside map")
                    .num("view_verified_us", m.view_verified_us)
                    .num("read_block_us", m.read_block_us)
                    .render(),
            );
        }
        out
    }
}
