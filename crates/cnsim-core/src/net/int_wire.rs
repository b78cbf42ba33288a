//! INT bytes on the wire as frames pass (the network's side of [`crate::int`]): a data frame grows by the
//! scheme's source bytes when it leaves its NIC and by the hop bytes at each switch, and sheds them when it
//! leaves its last switch or is dropped; the data bytes the outputs count never include them.

use crate::frame::{FrameId, FrameKind};
use crate::net::Network;

impl Network {
    /// Data frame `fr` of `size` bytes leaves its source NIC: the INT header's source bytes are
    /// added (when the scheme puts INT on the wire); returns its size on the wire.
    #[inline(never)]
    pub(crate) fn int_at_source(&mut self, fr: FrameId, size: u32) -> u32 {
        let Some(int) = self.int.as_mut() else { return size };
        let b = int.wire.source_bytes;
        *int.extra_slot(fr) = b;
        if b == 0 {
            return size;
        }
        self.c.int_bytes_added += b as u64;
        let f = self.frames.get_mut(fr);
        f.size += b;
        f.size
    }

    /// Data frame `fr` enters a switch: the hop's INT bytes are added before admission.
    #[inline]
    pub(crate) fn int_at_switch(&mut self, fr: FrameId) {
        let Some(int) = self.int.as_mut() else { return };
        let b = int.wire.hop_bytes;
        if b == 0 || self.frames.get(fr).kind != FrameKind::Data {
            return;
        }
        *int.extra_slot(fr) += b;
        self.c.int_bytes_added += b as u64;
        self.frames.get_mut(fr).size += b;
    }

    /// Remove the INT bytes of data frame `fr` (it leaves its last switch, or is dropped); returns
    /// its data size.
    #[inline(never)]
    pub(crate) fn int_strip(&mut self, fr: FrameId) -> u32 {
        let size = self.frames.get(fr).size;
        let Some(int) = self.int.as_mut() else { return size };
        let b = std::mem::take(int.extra_slot(fr));
        self.c.int_bytes_removed += b as u64;
        self.frames.get_mut(fr).size -= b;
        size - b
    }
}
