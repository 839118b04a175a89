//! Writing one metric family into the exposition (prometheus-client's descriptor encoder):
//! [`single`] and [`family`], for the daemon's families (`metrics`) and the uploader's
//! (`upload`). A leaf: it calls no other module of the control plane.

use std::fmt;

use prometheus_client::encoding::{DescriptorEncoder, EncodeLabelSet, EncodeMetric};
use prometheus_client::metrics::TypedMetric;

/// One family of one metric, without labels.
pub fn single<M: EncodeMetric + TypedMetric>(
    enc: &mut DescriptorEncoder<'_>,
    name: &str,
    help: &str,
    metric: &M,
) -> fmt::Result {
    metric.encode(enc.encode_descriptor(name, help, None, M::TYPE)?)
}

/// One family, a metric per label set.
pub fn family<L: EncodeLabelSet, M: EncodeMetric + TypedMetric>(
    enc: &mut DescriptorEncoder<'_>,
    name: &str,
    help: &str,
    samples: impl IntoIterator<Item = (L, M)>,
) -> fmt::Result {
    let mut m = enc.encode_descriptor(name, help, None, M::TYPE)?;
    for (labels, metric) in samples {
        metric.encode(m.encode_family(&labels)?)?;
    }
    Ok(())
}
