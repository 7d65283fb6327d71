"""YOLOv7 (base), plain torch, random weights, as deployed for inference: 36.9M parameters.

Model file for ``tops-advisor count examples/yolov7.py --batch 1 --dtype fp16``.

The layer list is ``cfg/deploy/yolov7.yaml`` of WongKinYiu/yolov7 (the published YOLOv7 (base): 640x640,
36.9M parameters, 104.7 GFLOPs; the repo's ``model.info()`` computes that as thop's multiply-adds x 2, so it
is our FLOPs, 2 per multiply-add), written out by hand:

- backbone: stem (3x3 convs 32, 64, 64, 128), four ELAN blocks (four 3x3 convs in a chain beside a 1x1
  branch, four outputs concatenated, 1x1 transition to 256 / 512 / 1024 / 1024) joined by MP blocks
  (max-pool + 1x1 beside 1x1 + 3x3 stride 2, concatenated);
- neck: SPPCSPC (max-pools 5, 9, 13 inside a CSP block, 512 channels), a top-down then bottom-up path
  aggregation with ELAN-H blocks (six outputs concatenated);
- head: RepConv at 256 / 512 / 1024 channels, fused to one 3x3 conv with bias as at inference
  (``--deploy``: the 3x3, 1x1 and identity branches with their BatchNorms fold into one 3x3 kernel), and
  the Detect head (1x1 conv to 3 anchors x (80 classes + 5) = 255 channels per scale, strides 8/16/32).
- every Conv is conv (no bias) + BatchNorm + SiLU, as the training graph has it: with BatchNorm folded
  into the conv (what ``fuse()`` or TensorRT does) each BN's 2 x C affine parameters become C conv biases,
  so the fused model has slightly fewer parameters. ``build_model(fused=True)`` builds that graph.

Parameter count: 36,905,341 as built here with ``fused=True`` (BN folded, RepConv fused: what the repo's
deploy model and the published 36.9M count), 36,926,621 with BatchNorm left separate (the default: the
operator sequence an unoptimised PyTorch forward runs). Both within 0.1% of 36.9M; 104.8 GFLOPs at
640x640 (published 104.7); ``tests/accuracy/test_article_examples.py`` checks both. The post-processing (box
decoding, NMS) and the pre-processing (resize, letterbox, upload) are not part of the network and are not
modelled.

Input sizes (``INPUT_SIZE``, or the environment variable ``YOLOV7_INPUT`` when the file is loaded):

- ``"640"`` (default): 640x640, the published test size;
- ``"1080p"``: a 1920x1080 video frame at native resolution, letterboxed as YOLO does (pad to a multiple of
  the largest stride, 32): 1088x1920. ``example_inputs_1080p(batch_size)`` gives it directly;
- ``"640-letterbox"``: the same frame resized to 640 on its long side, 360x640 padded to 384x640 (what
  ``detect.py --img-size 640`` feeds the network for 16:9 video: "1080p detection" usually means this).

    YOLOV7_INPUT=1080p tops-advisor count examples/yolov7.py --batch 1 --dtype fp16
"""

import os

import torch
from torch import nn

INPUT_SIZES = {"640": (640, 640), "1080p": (1088, 1920), "640-letterbox": (384, 640)}
INPUT_SIZE = os.environ.get("YOLOV7_INPUT", "640")
NUM_CLASSES = 80
NUM_ANCHORS = 3
PUBLISHED_PARAMS = 36.9e6  # YOLOv7 paper (Wang, Bochkovskiy, Liao 2022), Table 1 and the repo README


class Conv(nn.Module):
    """conv + BatchNorm + SiLU (YOLOv7's ``Conv``); ``fused``: conv with bias + SiLU."""

    def __init__(self, c_in: int, c_out: int, k: int = 1, s: int = 1, fused: bool = False):
        super().__init__()
        self.conv = nn.Conv2d(c_in, c_out, k, s, k // 2, bias=fused)
        self.bn = nn.Identity() if fused else nn.BatchNorm2d(c_out, eps=1e-3, momentum=0.03)
        self.act = nn.SiLU()

    def forward(self, x):
        return self.act(self.bn(self.conv(x)))


class ELAN(nn.Module):
    """Two 1x1 branches; a chain of four 3x3 convs on the second; concatenate ``taps`` outputs; 1x1 out.

    Backbone ELAN: taps = the 1x1 branches and every second 3x3 (4 tensors). ELAN-H (neck): all 6.
    """

    def __init__(self, c_in: int, c_branch: int, c_mid: int, c_out: int, head: bool, fused: bool):
        super().__init__()
        self.cv1 = Conv(c_in, c_branch, 1, fused=fused)
        self.cv2 = Conv(c_in, c_branch, 1, fused=fused)
        self.chain = nn.ModuleList(Conv(c_branch if i == 0 else c_mid, c_mid, 3, fused=fused) for i in range(4))
        self.head = head
        n_cat = 2 * c_branch + (4 if head else 2) * c_mid
        self.out = Conv(n_cat, c_out, 1, fused=fused)

    def forward(self, x):
        a, b = self.cv1(x), self.cv2(x)
        outs = [b]
        for conv in self.chain:
            outs.append(conv(outs[-1]))
        taps = outs[::-1] if self.head else [outs[4], outs[2]]
        return self.out(torch.cat(taps + ([a] if self.head else [b, a]), 1))


class MP(nn.Module):
    """Downsample by 2: max-pool + 1x1 beside 1x1 + 3x3 stride 2, concatenated (plus ``extra``, in the neck)."""

    def __init__(self, c_in: int, c: int, fused: bool):
        super().__init__()
        self.pool = nn.MaxPool2d(2, 2)
        self.cv1 = Conv(c_in, c, 1, fused=fused)
        self.cv2 = Conv(c_in, c, 1, fused=fused)
        self.cv3 = Conv(c, c, 3, 2, fused=fused)

    def forward(self, x, extra=None):
        parts = [self.cv3(self.cv2(x)), self.cv1(self.pool(x))]
        return torch.cat(parts + ([extra] if extra is not None else []), 1)


class SPPCSPC(nn.Module):
    def __init__(self, c_in: int, c: int, fused: bool):
        super().__init__()
        self.cv1 = Conv(c_in, c, 1, fused=fused)
        self.cv2 = Conv(c_in, c, 1, fused=fused)
        self.cv3 = Conv(c, c, 3, fused=fused)
        self.cv4 = Conv(c, c, 1, fused=fused)
        self.pools = nn.ModuleList(nn.MaxPool2d(k, 1, k // 2) for k in (5, 9, 13))
        self.cv5 = Conv(4 * c, c, 1, fused=fused)
        self.cv6 = Conv(c, c, 3, fused=fused)
        self.cv7 = Conv(2 * c, c, 1, fused=fused)

    def forward(self, x):
        x1 = self.cv4(self.cv3(self.cv1(x)))
        y1 = self.cv6(self.cv5(torch.cat([x1] + [p(x1) for p in self.pools], 1)))
        return self.cv7(torch.cat([y1, self.cv2(x)], 1))


class YOLOv7(nn.Module):
    def __init__(self, num_classes: int = NUM_CLASSES, fused: bool = False):
        super().__init__()
        f = fused
        self.stem = nn.Sequential(Conv(3, 32, 3, fused=f), Conv(32, 64, 3, 2, fused=f), Conv(64, 64, 3, fused=f),
                                  Conv(64, 128, 3, 2, fused=f))
        self.elan2 = ELAN(128, 64, 64, 256, False, f)            # P2/4
        self.mp3, self.elan3 = MP(256, 128, f), ELAN(256, 128, 128, 512, False, f)     # P3/8
        self.mp4, self.elan4 = MP(512, 256, f), ELAN(512, 256, 256, 1024, False, f)    # P4/16
        self.mp5, self.elan5 = MP(1024, 512, f), ELAN(1024, 256, 256, 1024, False, f)  # P5/32
        self.sppcspc = SPPCSPC(1024, 512, f)
        self.up4_lat, self.up4_route = Conv(512, 256, 1, fused=f), Conv(1024, 256, 1, fused=f)
        self.elan_h4 = ELAN(512, 256, 128, 256, True, f)
        self.up3_lat, self.up3_route = Conv(256, 128, 1, fused=f), Conv(512, 128, 1, fused=f)
        self.elan_h3 = ELAN(256, 128, 64, 128, True, f)
        self.down4, self.elan_d4 = MP(128, 128, f), ELAN(512, 256, 128, 256, True, f)
        self.down5, self.elan_d5 = MP(256, 256, f), ELAN(1024, 512, 256, 512, True, f)
        self.upsample = nn.Upsample(scale_factor=2, mode="nearest")
        # RepConv at inference: one 3x3 conv with bias + SiLU (the training-time branches fused)
        self.rep = nn.ModuleList(Conv(c, 2 * c, 3, fused=True) for c in (128, 256, 512))
        self.detect = nn.ModuleList(nn.Conv2d(2 * c, NUM_ANCHORS * (num_classes + 5), 1) for c in (128, 256, 512))

    def forward(self, x):
        x = self.stem(x)
        p3 = self.elan3(self.mp3(self.elan2(x)))
        p4 = self.elan4(self.mp4(p3))
        p5 = self.sppcspc(self.elan5(self.mp5(p4)))
        n4 = self.elan_h4(torch.cat([self.up4_route(p4), self.upsample(self.up4_lat(p5))], 1))
        n3 = self.elan_h3(torch.cat([self.up3_route(p3), self.upsample(self.up3_lat(n4))], 1))
        d4 = self.elan_d4(self.down4(n3, n4))
        d5 = self.elan_d5(self.down5(d4, p5))
        return tuple(det(rep(t)) for t, rep, det in zip((n3, d4, d5), self.rep, self.detect, strict=True))


def build_model(fused: bool = False) -> nn.Module:
    return YOLOv7(fused=fused)


def example_inputs(batch_size: int, input_size: str | None = None):
    """Random images at ``input_size`` (default: the module's ``INPUT_SIZE``), NCHW."""
    size = input_size or INPUT_SIZE
    if size not in INPUT_SIZES:
        raise ValueError(f"unknown YOLOv7 input size {size!r}; expected one of {', '.join(INPUT_SIZES)}")
    h, w = INPUT_SIZES[size]
    return (torch.randn(batch_size, 3, h, w),)


def example_inputs_1080p(batch_size: int):
    """A 1920x1080 frame letterboxed to 1088x1920."""
    return example_inputs(batch_size, "1080p")
