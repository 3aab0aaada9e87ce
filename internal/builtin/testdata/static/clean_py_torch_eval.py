import torch


def evaluate(model, batch):
    model.eval()
    with torch.no_grad():
        return model(batch)
