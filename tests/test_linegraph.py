import numpy as np
import scipy.sparse as sp
from netfixtures import grid_network

from evroute.linegraph import build_line_graph
from evroute.network.road_network import RoadNetwork


def test_turn_counts_on_hand_made_grid():
    # 3x2 two-way grid: junction degrees (corners 2, middle 3) -> turns = sum_v deg(v) * (deg(v) - 1)
    net = grid_network(3, 2)
    # corners: 4 junctions of degree 2 -> 2 each; middle: 2 junctions of degree 3 -> 6 each
    assert net.n_edges == 2 * 7
    assert net.n_turns == 4 * 2 + 2 * 6
    lg = build_line_graph(net)
    assert lg.n_nodes == 14 and lg.n_arcs == 20


def test_largest_scc_drops_dead_one_way_edge():
    net = grid_network(3, 2)
    # add a one-way spur 5>9 (no way back): it is not in the largest strongly connected component
    spur = RoadNetwork(
        name="spur",
        edge_ids=list(net.edge_ids) + ["5>9"],
        from_node=list(net.from_node) + ["5"],
        to_node=list(net.to_node) + ["9"],
        length_m=np.append(net.length_m, 50.0),
        speed_mps=np.append(net.speed_mps, 10.0),
        z_from_m=np.append(net.z_from_m, 0.0),
        z_to_m=np.append(net.z_to_m, 0.0),
        geometry=net.geometry + [net.geometry[0]],
        turns=np.vstack([net.turns, [[i, net.n_edges] for i in range(net.n_edges) if net.to_node[i] == "5"]]),
    )
    lg = build_line_graph(spur)
    assert lg.n_nodes == net.n_edges
    assert "5>9" not in set(lg.network.edge_ids)
    assert np.array_equal(lg.parent_index, np.arange(net.n_edges))


def test_contexts_standardised():
    lg = build_line_graph(grid_network(4, 3))
    x = lg.contexts()
    assert x.shape == (lg.n_nodes, 3)
    np.testing.assert_allclose(x.std(axis=0), 1.0)
    np.testing.assert_allclose(x.mean(axis=0), 0.0, atol=1e-12)


def test_incidence_laplacian_matches_definition():
    lg = build_line_graph(grid_network(3, 3))
    b = lg.incidence().toarray()
    t = lg.turns
    lbar = lg.network.length_m.mean()
    for c, (e1, e2) in enumerate(t):
        w = lbar / lg.network.length_m[e1]
        assert b[e1, c] == -w and b[e2, c] == w
        assert np.count_nonzero(b[:, c]) == 2
    lap = lg.laplacian()
    np.testing.assert_allclose(lap.toarray(), b @ b.T)
    # symmetric PSD with the constant vector in its kernel
    assert abs(lap - lap.T).max() < 1e-12
    np.testing.assert_allclose(lap @ np.ones(lg.n_nodes), 0.0, atol=1e-9)
    assert np.linalg.eigvalsh(lap.toarray()).min() > -1e-9
    assert sp.issparse(lap)
