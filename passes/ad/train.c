/* train.c: the "train" pass: ENTRY_train, a whole training step as one
 * graph (--train=sgd|momentum|adamw).
 *
 * Requires: u->grad built by the grad pass with the default wrt (every
 * param, in declaration order; --wrt is refused on the command line),
 * so its arguments are the entry's then d_output and its returns the
 * entry's then one gradient per param.
 * Provides: u->train, a graph named ENTRY_train placed last, whose
 * arguments are the entry's, then the optimizer's hyperparameters (f32
 * scalars: sgd lr, weight_decay; momentum lr, momentum, weight_decay;
 * adamw lr, beta1, beta2, eps, weight_decay), then the optimizer state
 * pieces (momentum: momentum_buffer_P per param; adamw: exp_avg_P per
 * param, exp_avg_sq_P per param, then step), each typed like its param
 * (step: a scalar of the params' dtype). Its body is the gradient
 * graph with d_output = 1 followed by the update, ordinary elementwise
 * ops; its returns are the entry's outputs, then the new value of every
 * param, then the new value of every state piece, and Graph.ret_into
 * says which argument each of those overwrites (code generation stores
 * them in place). u->train_abi describes the C entry: the state pieces
 * are one caller buffer, piece k at a 64-byte aligned offset.
 * Without --grad (and --hvp) the gradient graph is dropped afterwards.
 *
 * Semantics: PyTorch's torch.optim.SGD (dampening 0, no nesterov,
 * weight decay added to the gradient; with momentum, buf = momentum *
 * buf + g, which is g at the first step since the state starts zeroed)
 * and torch.optim.AdamW (decoupled weight decay, bias correction with
 * the step count kept in the state; the scalar bias corrections are
 * computed in f64 as PyTorch computes them in Python floats).
 *
 * Diagnostics: no param, a loss that is not one real floating-point
 * element, params of different dtypes or not f32/f64.
 */
#include "passes/ad/ad.h"

#include <stdio.h>
#include <string.h>

typedef struct {
  Ctx *c;
  const Graph *src; /* the gradient graph: its names are taken */
  Graph *g;
} Names;

/* base, or base_1, base_2, ... : not a value of src nor an arg of g */
static const char *fresh(Names *n, const char *base) {
  char buf[300];
  const char *nm = base;
  for (int i = 1;; i++) {
    bool used = ad_find_value(n->src, nm) != NULL;
    for (int k = 0; !used && k < n->g->nargs; k++)
      used = n->g->args[k]->name && !strcmp(n->g->args[k]->name, nm);
    if (!used) return arena_strdup(n->c->arena, nm);
    snprintf(buf, sizeof buf, "%s_%d", base, i);
    nm = buf;
  }
}

static const char *fresh2(Names *n, const char *pfx, const char *name) {
  char buf[300];
  snprintf(buf, sizeof buf, "%s%s", pfx, name);
  return fresh(n, buf);
}

static const char *const hyper_names[][6] = {
    [TRAIN_SGD] = {"lr", "weight_decay", NULL},
    [TRAIN_MOMENTUM] = {"lr", "momentum", "weight_decay", NULL},
    [TRAIN_ADAMW] = {"lr", "beta1", "beta2", "eps", "weight_decay", NULL},
};

/* A hyperparameter (f32 scalar) as a scalar of dtype dt. */
static Node *hyper(IrBuilder *b, Node *h, DType dt) {
  return h->type.dt == dt ? h : ib_cast(b, h, dt);
}

#define BIN(op, x, y) ib_bin(b, OP_##op, (x), (y))

/* The parameters' common dtype, or DT_INVALID after a diagnostic. */
static DType param_dtype(Unit *u, Node *const *p, int np) {
  DType dt = p[0]->type.dt;
  for (int k = 0; k < np; k++) {
    if (p[k]->type.dt != DT_F32 && p[k]->type.dt != DT_F64) {
      diag_error(u->ctx, p[k]->loc, "--train: param '%%%s' has dtype %s; "
                 "training needs f32 or f64 params", p[k]->name,
                 dt_name(p[k]->type.dt));
      return DT_INVALID;
    }
    if (p[k]->type.dt != dt) {
      diag_error(u->ctx, p[k]->loc, "--train: param '%%%s' is %s but "
                 "'%%%s' is %s; the optimizer state needs one dtype for "
                 "every param", p[k]->name, dt_name(p[k]->type.dt),
                 p[0]->name, dt_name(dt));
      return DT_INVALID;
    }
  }
  return dt;
}

bool pass_train(Unit *u) {
  if (!u->opt || !u->opt->train || !u->grad) return true;
  Ctx *c = u->ctx;
  const Graph *e = u->entry, *gg = u->grad;
  int opt = u->opt->train;
  const Node *loss = e->rets[0];
  int64_t cnt = 0; /* a dim: ?b elements is no scalar either */
  char cs[64];
  if (type_numel_dim(c, &loss->type, &cnt) != DIM_OK || cnt != 1 ||
      !dt_is_float(loss->type.dt))
    return diag_error(c, loss->loc, "--train: the first return value of "
                      "'%s' (the loss) must be a real floating-point value "
                      "of one element (it is %s with %s elements)",
                      e->name, dt_name(loss->type.dt),
                      dim_str(cnt, cs, sizeof cs));
  int nf = e->nret, np = gg->nret - nf, nin = gg->nargs - 1;
  Node **par = arena_alloc(c->arena, sizeof(Node *) * (size_t)(np + 1));
  int *pidx = arena_alloc(c->arena, sizeof(int) * (size_t)(np + 1));
  for (int i = 0, k = 0; i < nin; i++)
    if (e->args[i]->op == OP_PARAM) pidx[k] = i, par[k++] = e->args[i];
  DType dt = param_dtype(u, par, np);
  if (dt == DT_INVALID) return false;

  char nm[256];
  snprintf(nm, sizeof nm, "%s_train", e->name);
  Graph *tg = ib_graph_detached(c, ib_fresh_graph_name(c, u->mod, nm),
                                e->loc);
  Names names = {c, gg, tg};
  Node **map = arena_alloc(c->arena,
                           sizeof(Node *) * ((size_t)gg->next_id + 1));
  for (int i = 0; i < nin; i++) {
    const Node *x = gg->args[i];
    map[x->id] = ir_arg_new(c, tg, x->op, x->name, x->type, x->loc);
  }
  Node *h[6];
  int nh = 0;
  Type f32 = {.dt = DT_F32, .rank = 0};
  for (; hyper_names[opt][nh]; nh++)
    h[nh] = ir_arg_new(c, tg, OP_INPUT, fresh(&names, hyper_names[opt][nh]),
                       f32, e->loc);
  /* state pieces: momentum: buf per param; adamw: m, v per param, step */
  int nst = opt == TRAIN_MOMENTUM ? np : opt == TRAIN_ADAMW ? 2 * np + 1 : 0;
  Node **st = arena_alloc(c->arena, sizeof(Node *) * (size_t)(nst + 1));
  for (int k = 0; k < np && opt == TRAIN_MOMENTUM; k++)
    st[k] = ir_arg_new(c, tg, OP_INPUT, fresh2(&names, "momentum_buffer_",
                       par[k]->name), par[k]->type, par[k]->loc);
  for (int k = 0; k < np && opt == TRAIN_ADAMW; k++)
    st[k] = ir_arg_new(c, tg, OP_INPUT, fresh2(&names, "exp_avg_",
                       par[k]->name), par[k]->type, par[k]->loc);
  for (int k = 0; k < np && opt == TRAIN_ADAMW; k++)
    st[np + k] = ir_arg_new(c, tg, OP_INPUT, fresh2(&names, "exp_avg_sq_",
                            par[k]->name), par[k]->type, par[k]->loc);
  if (opt == TRAIN_ADAMW)
    st[2 * np] = ir_arg_new(c, tg, OP_INPUT, fresh(&names, "step"),
                            (Type){.dt = dt, .rank = 0}, e->loc);

  /* the gradient graph with d_output = 1 */
  IrBuilder bb = {c, tg, e->loc}, *b = &bb;
  map[gg->args[nin]->id] = ib_fill(b, gg->args[nin]->type, 1.0);
  Node *buf[64];
  for (int i = 0; i < gg->nnodes; i++) {
    const Node *n = gg->nodes[i];
    if (n->op == OP_INPUT || n->op == OP_PARAM) continue;
    Node **in = n->nin > 64
        ? arena_alloc(c->arena, sizeof(Node *) * (size_t)n->nin) : buf;
    for (int k = 0; k < n->nin; k++) in[k] = map[n->in[k]->id];
    bb.loc = n->loc;
    Node *k = ib_clone(b, n, in);
    k->name = n->name;
    map[n->id] = k;
  }
  bb.loc = e->loc;

  int nret = nf + np + nst;
  Node **rets = arena_alloc(c->arena, sizeof(Node *) * (size_t)nret);
  int *into = arena_alloc(c->arena, sizeof(int) * (size_t)nret);
  for (int j = 0; j < nf; j++) rets[j] = map[gg->rets[j]->id], into[j] = -1;
  Node *lr = hyper(b, h[0], dt), *wd = hyper(b, h[nh - 1], dt);
  Node *step = NULL, *step_size = NULL, *bc2_sqrt = NULL, *decay = NULL;
  Node *b1 = NULL, *b2 = NULL, *eps = NULL;
  if (opt == TRAIN_ADAMW) {
    /* step' = step + 1; the bias corrections in f64, as PyTorch */
    step = BIN(ADD, st[2 * np], ib_scalar(b, dt, 1));
    Node *s64 = hyper(b, step, DT_F64);
    Node *one = ib_scalar(b, DT_F64, 1);
    Node *bc1 = BIN(SUB, one, BIN(POW, hyper(b, h[1], DT_F64), s64));
    Node *bc2 = BIN(SUB, one, BIN(POW, hyper(b, h[2], DT_F64), s64));
    step_size = hyper(b, BIN(DIV, hyper(b, h[0], DT_F64), bc1), dt);
    bc2_sqrt = hyper(b, ib_un(b, OP_SQRT, bc2), dt);
    decay = BIN(SUB, ib_scalar(b, dt, 1), BIN(MUL, lr, wd));
    b1 = hyper(b, h[1], dt), b2 = hyper(b, h[2], dt), eps = hyper(b, h[3], dt);
  }
  Node *mom = opt == TRAIN_MOMENTUM ? hyper(b, h[1], dt) : NULL;
  for (int k = 0; k < np; k++) {
    Node *w = map[gg->args[pidx[k]]->id], *g = map[gg->rets[nf + k]->id];
    Node *nw;
    if (opt == TRAIN_ADAMW) {
      Node *m = st[k], *v = st[np + k];
      Node *one = ib_scalar(b, dt, 1);
      /* m' = lerp(m, g, 1 - beta1); v' = beta2 v + (1 - beta2) g g */
      Node *nm_ = BIN(ADD, m, BIN(MUL, BIN(SUB, one, b1), BIN(SUB, g, m)));
      Node *nv = BIN(ADD, BIN(MUL, v, b2),
                     BIN(MUL, BIN(SUB, one, b2), BIN(MUL, g, g)));
      Node *denom = BIN(ADD, BIN(DIV, ib_un(b, OP_SQRT, nv), bc2_sqrt), eps);
      nw = BIN(SUB, BIN(MUL, w, decay), BIN(MUL, step_size,
                                            BIN(DIV, nm_, denom)));
      rets[nf + np + k] = nm_;
      rets[nf + np + np + k] = nv;
    } else {
      Node *gd = BIN(ADD, g, BIN(MUL, wd, w));
      if (opt == TRAIN_MOMENTUM) {
        gd = BIN(ADD, BIN(MUL, mom, st[k]), gd);
        rets[nf + np + k] = gd;
      }
      nw = BIN(SUB, w, BIN(MUL, lr, gd));
    }
    rets[nf + k] = nw;
    into[nf + k] = pidx[k];
  }
  if (opt == TRAIN_ADAMW) rets[nf + np + 2 * np] = step;
  for (int k = 0; k < nst; k++) into[nf + np + k] = nin + nh + k;
  ir_set_rets(c, tg, rets, nret);
  tg->ret_into = into;

  /* the C arguments: one state buffer, pieces at 64-byte offsets */
  TrainAbi *a = &u->train_abi;
  *a = (TrainAbi){nh, nst, arena_alloc(c->arena, sizeof(int64_t) *
                                                     (size_t)(nst + 1)),
                  0, dt, nf};
  for (int k = 0; k < nst; k++) {
    a->state_off[k] = a->state_bytes;
    a->state_bytes += (type_bytes(&st[k]->type) + 63) / 64 * 64;
  }
  u->train = ib_attach(c, u->mod, tg);
  if (!u->opt->grad && !u->opt->hvp) {
    ir_module_remove_graph(u->mod, u->grad);
    u->grad = NULL;
  }
  return true;
}
