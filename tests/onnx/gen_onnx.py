#!/usr/bin/python3
"""gen_onnx.py -- write the ONNX test models and their PyTorch references.

Needs torch (1.13 was used) and onnx; run once, the outputs are committed
so that CI (tests/onnx/run_onnx_test.py) needs neither torch nor a GPU:

    /usr/bin/python3 tests/onnx/gen_onnx.py

For each model NAME it writes tests/onnx/data/NAME.onnx (exported from
float32 weights with torch.onnx.export, fixed batch size) and
tests/onnx/data/NAME_ref.npz: the inputs (float32 as fed to rlx) and the
outputs of the same weights computed by torch in float64. For the MLP
the file also holds the training references, in float64: the mean
cross-entropy (NLL of its log_softmax output) for one batch of labels,
the gradient of every param (key "grad:ONNX_NAME"), and the losses of
SGD_STEPS steps of plain SGD with learning rate SGD_LR on that batch.

Models:
  mlp   Linear 64->32, relu; x @ W + b (MatMul + Add) 32->32, GELU (erf,
        exported as Div/Erf/Add/Mul/Mul); Linear 32->10; log_softmax.
  cnn   conv 3x3 pad 1 + bias (3->8), BatchNorm2d (eval, random running
        stats), relu, max pool 2; grouped conv (groups 2) + sigmoid;
        avg pool 3 stride 2 pad 1 (count_include_pad: Pad+AveragePool);
        flatten; Linear 32->10; softmax.
  misc  (opset 17) LayerNorm, tanh, reshape/transpose, slices + concat,
        an embedding Gather with runtime indices, a constant-index
        Gather, broadcast MatMul/Sub/Div, ReduceSum, ReduceMean, softmax
        over a middle axis, flatten.
"""
import os

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

HERE = os.path.dirname(os.path.abspath(__file__))
DATA = os.path.join(HERE, "data")
SGD_STEPS, SGD_LR = 5, 0.5


class MLP(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(64, 32)
        self.w2 = nn.Parameter(torch.randn(32, 32) / 32 ** 0.5)
        self.b2 = nn.Parameter(torch.randn(32) * 0.1)
        self.fc3 = nn.Linear(32, 10)

    def forward(self, x):
        h = F.relu(self.fc1(x))
        h = F.gelu(h @ self.w2 + self.b2)
        return F.log_softmax(self.fc3(h), dim=-1)


class CNN(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(3, 8, 3, padding=1)
        self.bn = nn.BatchNorm2d(8)
        self.conv2 = nn.Conv2d(8, 8, 3, padding=1, groups=2)
        self.fc = nn.Linear(8 * 2 * 2, 10)

    def forward(self, x):
        y = F.max_pool2d(F.relu(self.bn(self.conv1(x))), 2)
        y = torch.sigmoid(self.conv2(y))
        y = F.avg_pool2d(y, 3, stride=2, padding=1, count_include_pad=True)
        return torch.softmax(self.fc(torch.flatten(y, 1)), dim=1)


class Misc(nn.Module):
    def __init__(self):
        super().__init__()
        self.ln = nn.LayerNorm(8)
        self.emb = nn.Embedding(5, 4)
        self.w = nn.Parameter(torch.randn(4, 3))
        self.scale = nn.Parameter(torch.rand(3) + 0.5)

    def forward(self, x, ids):
        y = torch.tanh(self.ln(x))                         # [2, 6, 8]
        y = y.reshape(2, 6, 2, 4).transpose(1, 2)          # [2, 2, 6, 4]
        y = torch.cat([y[:, :, 1:5], y[:, :, -2:]], dim=2)  # [2, 2, 6, 4]
        e = self.emb(ids)                                   # [2, 6, 4]
        y = y + e.unsqueeze(1)
        z = (y @ self.w - y[:, 0:1].mean(dim=-1, keepdim=True)) / self.scale
        s = z.sum(dim=3)                                    # [2, 2, 6]
        p = torch.softmax(s, dim=1)
        q = z[:, :, 2] * p[:, :, 2:3]                       # [2, 2, 3]
        return torch.flatten(q, 1), torch.sigmoid(s).mean(dim=(1, 2))


def export(model, args, name, opset, **kw):
    path = os.path.join(DATA, name + ".onnx")
    torch.onnx.export(model, args, path, opset_version=opset, **kw)
    return path


def ref64(model, args):
    m64 = model.double()
    with torch.no_grad():
        out = m64(*[a.double() if a.is_floating_point() else a
                    for a in args])
    model.float()
    return out if isinstance(out, tuple) else (out,)


def main():
    os.makedirs(DATA, exist_ok=True)
    torch.manual_seed(0)

    # ---- MLP: forward, gradients, SGD
    mlp = MLP().eval()
    x = torch.rand(8, 64)
    labels = torch.randint(0, 10, (8,))
    export(mlp, (x,), "mlp", 14)
    (out,) = ref64(mlp, (x,))
    ref = {"in:0": x.numpy(), "out:0": out.numpy(),
           "labels": labels.numpy()}
    m64 = MLP()
    m64.load_state_dict(mlp.state_dict())
    m64.double()
    loss = F.nll_loss(m64(x.double()), labels)
    grads = torch.autograd.grad(loss, list(m64.parameters()))
    ref["loss"] = loss.detach().numpy()
    names = {"fc1.weight", "fc1.bias", "w2", "b2", "fc3.weight", "fc3.bias"}
    for (pn, _), g in zip(m64.named_parameters(), grads):
        assert pn in names, pn
        ref["grad:" + pn] = g.numpy()
    opt = torch.optim.SGD(m64.parameters(), lr=SGD_LR)
    losses = []
    for _ in range(SGD_STEPS):
        opt.zero_grad()
        loss = F.nll_loss(m64(x.double()), labels)
        losses.append(loss.item())
        loss.backward()
        opt.step()
    ref["sgd_losses"] = np.array(losses)
    ref["sgd_lr"] = np.array(SGD_LR)
    np.savez(os.path.join(DATA, "mlp_ref.npz"), **ref)

    # ---- CNN: forward (BatchNorm kept as a node: TrainingMode.PRESERVE
    # on an eval() model; the default EVAL export folds it into the conv)
    cnn = CNN()
    with torch.no_grad():
        cnn.bn.running_mean.uniform_(-0.5, 0.5)
        cnn.bn.running_var.uniform_(0.5, 2.0)
        cnn.bn.weight.uniform_(0.5, 1.5)
        cnn.bn.bias.uniform_(-0.3, 0.3)
    cnn.eval()
    x = torch.randn(2, 3, 8, 8)
    export(cnn, (x,), "cnn", 14,
           training=torch.onnx.TrainingMode.PRESERVE)
    (out,) = ref64(cnn, (x,))
    np.savez(os.path.join(DATA, "cnn_ref.npz"), **{
        "in:0": x.numpy(), "out:0": out.numpy()})

    # ---- misc ops
    misc = Misc().eval()
    x = torch.randn(2, 6, 8)
    ids = torch.randint(0, 5, (2, 6))
    export(misc, (x, ids), "misc", 17)
    outs = ref64(misc, (x, ids))
    np.savez(os.path.join(DATA, "misc_ref.npz"), **{
        "in:0": x.numpy(), "in:1": ids.numpy(),
        **{"out:%d" % i: o.numpy() for i, o in enumerate(outs)}})
    for f in sorted(os.listdir(DATA)):
        print("%-16s %6d bytes" % (f, os.path.getsize(os.path.join(DATA, f))))


if __name__ == "__main__":
    main()
